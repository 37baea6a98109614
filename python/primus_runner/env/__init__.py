"""The environment variables: the registry (data/variables.yaml), its rules engine and
rules, env files, the launch's explicit inputs (``inputs``: config direct.env and
--env, merged before the precedence step) and the precedence step's refusals as
registered findings (``refusals``), the generated docs and the `env` command. Must not detect hardware
itself: it takes what detection found as input.
"""
