"""The fleet doctor (docs/doctor.md "Fleet doctor"): is this node, and this fleet, fit to train on?

Sub-modules, one job each: ``record`` (the Check row and the report), ``system``
(host limits, CPU, versions, the rendezvous port), ``accel`` (accelerators as
sysfs and the vendor tools report them, devices held by another process),
``network`` (the launch verdict, NICs and RDMA ports), ``clock`` (offset from
node 0 in a job), ``fleet`` (comparing node reports, ranking, the ``--exclude``
line), ``probe`` (node-to-node bandwidth with the job's backend) and ``cli``
(``python3 -m primus_runner doctor``). The doctor only reads and measures: it
never changes the host, never starts a workload and never re-implements a rule
of the rules engine (the verdict is the engine's own answer).
"""
from __future__ import annotations
