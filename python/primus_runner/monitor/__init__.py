"""The run monitor: one per node and launch, watching the ranks while they run.

Owns the decision that a run hangs, that a rank is stopped, that the ranks wait
in mismatched collectives, that one rank is busy while the others wait for it,
and which rank is a straggler, from what the kernel and the ranks' stacks say
(procstat.py, verdicts.py, straggler.py), with no timeout to tune; the loop
(watch.py) and what is done with a verdict (act.py); cli.py is its command line,
started by runner/lib/watchdog.sh. The stacks themselves are read and dumped by
python/primus_runner/diagnose/; the run is stopped only by the launcher.
"""
