"""``python -m primus_runner.diagnose``: runs python/primus_runner/diagnose/cli.py
(dump, stacks, merge, gather); decides nothing itself."""
import sys

from primus_runner.diagnose.cli import main

sys.exit(main())
