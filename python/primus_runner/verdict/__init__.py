"""The launch's verdict, in one place (issue 29).

``inputs`` merges the launch's own inputs (config ``direct.env``, ``--env
KEY=VALUE|FILE|NAME``) into the environment before the precedence step
(ranks, detection), so a value gives the same verdict exported, through
``--env`` and through ``direct.env``. ``refusals`` turns the precedence step's
refusals into registered findings (rule ids of data/variables.yaml), so
``primus-cli env check`` - which runs the direct launcher's own decision path
up to its verdict (runner/lib/env_check.sh) - reports them like any rule.
Nothing here starts a process or applies a value; the shell exports what the
launch helper returns.
"""
