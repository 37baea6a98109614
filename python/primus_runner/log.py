"""Logging with the same prefix, levels and switches as runner/lib/common.sh.

Every level goes to stderr, as in bash (one stream); PRIMUS_LOG_LEVEL filters,
PRIMUS_LOG_TIMESTAMP=1 adds a UTC timestamp, colour only on a TTY with
PRIMUS_LOG_COLOR not 0. Messages pass through secret masking.
"""
from __future__ import annotations

import os
import sys
import time

from primus_runner.facts import LOG_LEVEL_DEFAULT, LOG_LEVELS, LOG_SWITCH_ON
from primus_runner.masking import mask_text

LEVELS = LOG_LEVELS
_COLORS = {"DEBUG": "\033[36m", "INFO": "\033[32m", "WARN": "\033[33m", "ERROR": "\033[31m"}


def _threshold() -> int:
    return LEVELS.get(os.environ.get("PRIMUS_LOG_LEVEL", "").upper(), LEVELS[LOG_LEVEL_DEFAULT])


def prefix() -> str:
    host = os.uname().nodename.split(".")[0]
    return f"[NODE-{os.environ.get('NODE_RANK', '0')}({host})]"


def emit(level: str, message: str) -> None:
    if LEVELS[level] < _threshold():
        return
    stream = sys.stderr  # every level: one stream (docs/run-on-one-node.md "What you see, and where it goes")
    stamp = ""
    if (os.environ.get("PRIMUS_LOG_TIMESTAMP") or "1") in LOG_SWITCH_ON:  # empty counts as unset
        stamp = time.strftime("[%Y-%m-%dT%H:%M:%SZ] ", time.gmtime())
    tag = f"[{level}]"
    if (os.environ.get("PRIMUS_LOG_COLOR") or "1") in LOG_SWITCH_ON and stream.isatty():
        tag = f"{_COLORS[level]}{tag}\033[0m"
    stream.write(f"{stamp}{prefix()} {tag} {mask_text(message)}\n")
    stream.flush()


def debug(message: str) -> None:
    emit("DEBUG", message)


def info(message: str) -> None:
    emit("INFO", message)


def warn(message: str) -> None:
    emit("WARN", message)


def error(message: str) -> None:
    emit("ERROR", message)
