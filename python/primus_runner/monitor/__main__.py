"""``python -m primus_runner.monitor``: runs python/primus_runner/monitor/cli.py;
decides nothing itself."""
import sys

from primus_runner.monitor.cli import main

sys.exit(main())
