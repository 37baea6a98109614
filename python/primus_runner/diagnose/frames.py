"""Stacks as records: py-spy's JSON and faulthandler's text, read into threads of frames.

Owns the parsing (pure functions) and the text rendering of one rank's stacks.
It must not start processes or read files (python/primus_runner/diagnose/pyspy.py does).
"""
from __future__ import annotations

import json
import re

from primus_runner.records import dataclass

# Library code: the standard library and installed packages (.../lib/python3.X/...),
# frozen modules, and native code (no .py file).
_LIBRARY = re.compile(r"/lib(64)?/python\d+(\.\d+)?/|^<frozen |/site-packages/|/dist-packages/")
# "  File "/x/y.py", line 3 in name" (faulthandler)
_FAULT_FRAME = re.compile(r'^\s*File "(?P<file>[^"]*)", line (?P<line>\d+) in (?P<name>.*)$')
_FAULT_THREAD = re.compile(r"^(Current thread|Thread) (?P<id>0x[0-9a-f]+)")


@dataclass(frozen=True)
class Frame:
    """One frame; a native frame's file is a library or a C/C++ source (py-spy
    ``--native`` gives "callproc.c" with a line), never a .py file."""

    name: str
    filename: str
    line: int

    @property
    def native(self) -> bool:
        return not self.filename.endswith(".py") and not self.filename.startswith("<")

    @property
    def workload(self) -> bool:
        """Python code of the workload (not the standard library, a package or native)."""
        return not self.native and not _LIBRARY.search(self.filename)

    @property
    def distributed(self) -> bool:
        """A frame of torch.distributed (a collective, a barrier, a store wait)."""
        return "/torch/distributed/" in self.filename

    def short(self) -> str:
        base = self.filename.rsplit("/", 1)[-1]
        if self.native:
            return f"{self.name} ({base})"
        if "/torch/" in self.filename:
            base = "torch/" + self.filename.split("/torch/", 1)[1]
        return f"{self.name} ({base}:{self.line})"


@dataclass(frozen=True)
class Thread:
    """One thread: name, whether it is the main thread, frames innermost first."""

    name: str
    ident: str
    frames: tuple[Frame, ...]

    @property
    def main(self) -> bool:
        return self.name == "MainThread"


def parse_pyspy_json(text: str) -> list[Thread]:
    """The threads of ``py-spy dump --json`` output ([] when it is not that)."""
    try:
        data = json.loads(text)
    except ValueError:
        return []
    threads: list[Thread] = []
    if not isinstance(data, list):
        return threads
    for item in data:
        if not isinstance(item, dict):
            continue
        frames = tuple(Frame(str(f.get("name", "?")), str(f.get("filename", "?")), int(f.get("line") or 0))
                       for f in item.get("frames", []) if isinstance(f, dict))
        threads.append(Thread(str(item.get("thread_name") or ""), str(item.get("os_thread_id") or ""), frames))
    return threads


def parse_faulthandler(text: str) -> list[Thread]:
    """The threads of a faulthandler dump (``Current thread 0x... (most recent call first):``).

    faulthandler names no threads: the first block that is the current one is taken
    as the main thread (the signal handler runs in the main thread)."""
    threads: list[Thread] = []
    ident = ""
    current = False
    frames: list[Frame] = []

    def close() -> None:
        if ident:
            threads.append(Thread("MainThread" if current else "", ident, tuple(frames)))

    for line in text.splitlines():
        head = _FAULT_THREAD.match(line)
        if head:
            close()
            ident, current, frames = head.group("id"), line.startswith("Current"), []
            continue
        frame = _FAULT_FRAME.match(line)
        if frame and ident:
            frames.append(Frame(frame.group("name").strip(), frame.group("file"), int(frame.group("line"))))
    close()
    return threads


def render(threads: list[Thread]) -> str:
    """Text of one rank's stacks, as py-spy prints them (innermost first)."""
    out: list[str] = []
    for thread in threads:
        out.append(f'Thread {thread.ident}: "{thread.name}"')
        for frame in thread.frames:
            where = frame.filename if frame.native else f"{frame.filename}:{frame.line}"
            out.append(f"    {frame.name} ({where})")
        out.append("")
    return "\n".join(out)
