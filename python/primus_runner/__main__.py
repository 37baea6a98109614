"""Entry point: ``python3 -m primus_runner <command> ...``."""
import sys

from primus_runner.cli import main

sys.exit(main(sys.argv[1:]))
