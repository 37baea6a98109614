"""Configuration files: .primus.yaml loading and precedence, the schema of its keys,
experiment configs, and the `config` command. Pure reading and checking; must not
export anything or start a process.
"""
