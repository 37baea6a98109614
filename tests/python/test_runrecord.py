"""The run's record: path beside the log, append-only JSON lines, a tolerant reader."""
from __future__ import annotations

import json
from pathlib import Path

from primus_runner import runrecord


def test_record_sits_beside_the_log() -> None:
    assert (runrecord.record_path("/l/primus-20261207T000000Z-node3.log")
            == "/l/primus-20261207T000000Z-node3.events.jsonl")
    assert runrecord.record_path("/l/mine") == "/l/mine.events.jsonl"


def test_append_writes_one_object_per_line(tmp_path: Path) -> None:
    log = str(tmp_path / "primus-x-node1.log")
    runrecord.append(log, "phase", node=1, host="h1", t=10.0, phase="hooks", start=9.0, end=10.0)
    runrecord.append(log, "end", node=1, host="h1", t=11.0, exit_code=0)
    lines = (tmp_path / "primus-x-node1.events.jsonl").read_text().splitlines()
    assert [json.loads(line)["event"] for line in lines] == ["phase", "end"]
    assert json.loads(lines[0]) == {"t": 10.0, "event": "phase", "node": 1, "host": "h1",
                                    "phase": "hooks", "start": 9.0, "end": 10.0}


def test_reader_skips_torn_and_foreign_lines(tmp_path: Path) -> None:
    path = tmp_path / "r.events.jsonl"
    path.write_text('{"t": 1, "event": "end", "node": 0, "host": "a", "exit_code": 3}\n'
                    '{"t": 2, "eve\n'  # a node killed mid-write
                    '[1, 2]\n'
                    '{"event": "phase"}\n')
    assert [e["exit_code"] for e in runrecord.read(str(path))] == [3]
    assert runrecord.read(str(tmp_path / "missing.events.jsonl")) == []
