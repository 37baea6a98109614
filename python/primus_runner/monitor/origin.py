"""How a signal reached a launcher or a Slurm entry, decided from the notes they leave.

Under slurm-entry (PRIMUS_SIGNAL_DIR set by it) the entry and its launcher each
note when they received a signal (runner/lib/signal_origin.sh writes
``<role>.<SIG>``, the time in microseconds; the entry leaves ``forwarded.<SIG>``
when it passes one on). A signal both received within PRIMUS_SIGNAL_WINDOW_MS
of each other was Slurm's delivery to every process of the step (scancel
--signal, --signal=SIG@T, the SIGTERM of a cancel or a time limit): it already
reached every rank and is not sent again. Origins: ``forwarded`` (by the
entry), ``step`` (Slurm, step-wide) or ``direct`` (sent to this process alone).
"""
from __future__ import annotations

import contextlib
import os
import time

ORIGINS = ("forwarded", "step", "direct")
ROLES = ("launcher", "entry")
POLL = 0.05  # seconds between two looks for the peer's note


def sender_text(origin: str) -> str:
    """The 'sender' part of a log line (pure). A shell has no SA_SIGINFO, so a
    signal sent straight to the launcher has no known sender."""
    if origin == "forwarded":
        return "sender: slurm-entry (forwarded)"
    if origin == "step":
        return "sender: Slurm (delivered to every process of the step)"
    return "sender: unknown (a shell cannot read a signal's sender)"


def within(seen_us: int, at_us: int, window_us: int) -> bool:
    """The two receipts are one delivery (pure)."""
    return abs(seen_us - at_us) <= window_us


def _note(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as handle:
            text = handle.readline().strip()
    except (OSError, ValueError):
        return None
    return int(text) if text.isdigit() else None


def peer_saw(signal_dir: str, peer: str, sig: str, at_us: int, window_us: int) -> bool:
    """PEER noted SIG within the window around AT_US; waits until the window
    around AT_US has passed for the note to appear."""
    path = os.path.join(signal_dir, f"{peer}.{sig}")
    while True:
        seen = _note(path)
        if seen is not None and within(seen, at_us, window_us):
            return True
        if time.time_ns() // 1000 - at_us > window_us:
            return False
        time.sleep(POLL)


def origin(signal_dir: str, role: str, sig: str, at_us: int, window_us: int) -> str:
    """How SIG, received by ROLE at AT_US, came: forwarded, step or direct."""
    if not signal_dir or not os.path.isdir(signal_dir):
        return "direct"
    if role == "launcher":
        marker = os.path.join(signal_dir, f"forwarded.{sig}")
        if os.path.exists(marker):
            with contextlib.suppress(OSError):
                os.remove(marker)
            return "forwarded"
    peer = "entry" if role == "launcher" else "launcher"
    return "step" if peer_saw(signal_dir, peer, sig, at_us, window_us) else "direct"
