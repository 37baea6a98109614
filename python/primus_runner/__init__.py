"""primus-runner's Python helpers: one package, run as ``python3 -m primus_runner <command>``.

The sub-packages are grouped by domain (docs/architecture.md walks them); the
modules at this level are the base every sub-package may use. This file holds
only the version and must import nothing.
"""
__version__ = "0.1.0"
