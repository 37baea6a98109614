"""The embedded default workloads, run by name only (``--module primus_runner``):
``train`` (a small CPU model with PyTorch DDP over gloo) and ``preflight`` (the
distributed environment checked on every rank). Never run in place of a missing
user script.
"""
