"""Entry point of ``python3 -m primus_runner <command> ...``: hands the arguments
to cli.main and exits with its status; decides nothing itself.
"""
import sys

from primus_runner.cli import main

sys.exit(main(sys.argv[1:]))
