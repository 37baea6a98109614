"""``python -m primus_runner.diagnose``: see python/primus_runner/diagnose/cli.py."""
import sys

from primus_runner.diagnose.cli import main

sys.exit(main())
