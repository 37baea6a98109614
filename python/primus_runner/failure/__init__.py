"""Why a rank ended, beyond its exit code: hints the failure report adds
(python/primus_runner/launch/report.py). Reads only; decides nothing about the launch."""
