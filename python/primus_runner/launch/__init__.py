"""One launch, end to end on the Python side: the launch helper the direct launcher
talks to, host detection for a launch, the container plan, the failure report and
the spawn wrapper. Decides and returns records; the shell exports and runs them.
"""
