"""The environment variables: the registry (data/variables.yaml), its rules engine and
rules, env files, the generated docs and the `env` command. Must not detect hardware
itself: it takes what detection found as input.
"""
