"""Hang and failure diagnosis of a running launch (issue 25).

Owns: reading every local rank's Python stack (py-spy, else the faulthandler
dump the worker wrapper set up), grouping the ranks by their innermost workload
frame into one summary, writing the bundle ``<log>.hang-<n>/`` and finding the
ranks of a running launch on this node. It must not decide when a job hangs
(``runner/helpers/hang_watch.sh`` does, from file times) nor stop anything (the
launcher does, runner/lib/supervise.sh).
"""
