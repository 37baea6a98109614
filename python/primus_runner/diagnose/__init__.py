"""Hang and failure diagnosis of a running launch.

Owns: reading every local rank's Python stack (py-spy, else the faulthandler
dump the worker wrapper set up), grouping the ranks by their innermost workload
frame into one summary, writing the bundle ``<log>.hang-<n>/`` and finding the
ranks of a running launch on this node. It must not decide when a job hangs
(the run monitor, python/primus_runner/monitor/, does) nor stop anything (the
launcher does, runner/lib/supervise.sh).
"""
