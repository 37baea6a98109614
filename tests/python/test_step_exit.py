"""The exit status of a Slurm step (python/primus_runner/launch/step_exit.py):
the task that ended first decides, not srun's highest status."""
from __future__ import annotations

from pathlib import Path

import pytest

from primus_runner.launch import step_exit
from primus_runner.launch.step_exit import TaskExit


def test_parse_a_record() -> None:
    assert step_exit.parse("1", "1700000000000100 3 1 node2\n") == TaskExit(1700000000000100, 3, "1", "node2", "1")
    assert step_exit.parse("1", "3 1 node2") is None
    assert step_exit.parse("1", "x 3 1 node2") is None


@pytest.mark.parametrize("srun, exits, code", [
    (0, [TaskExit(1, 3, "1", "n2", "1")], 0),                          # srun says all went well
    (137, [], 137),                                                    # no record: srun's own
    (137, [TaskExit(5, 3, "1", "n2", "1")], 3),                        # the hook failed, node1 killed
    (143, [TaskExit(9, 2, "0", "n1", "0"), TaskExit(5, 2, "1", "n2", "1")], 2),
    (7, [TaskExit(9, 7, "0", "n1", "0"), TaskExit(5, 1, "1", "n2", "1")], 1),   # first ended decides
    (3, [TaskExit(5, 3, "1", "n2", "1")], 3),                          # the same: nothing to say
])
def test_decide(srun: int, exits: list[TaskExit], code: int) -> None:
    decided, why = step_exit.decide(srun, exits)
    assert decided == code
    assert bool(why) == (code != srun)


def test_start_end_in_the_workspace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = step_exit.start({"PRIMUS_WORKSPACE": str(tmp_path / "ws")})
    assert Path(directory).parent == tmp_path / "ws"
    assert Path(directory).name.startswith(step_exit.PREFIX)
    (Path(directory) / "task-1").write_text("1700000000000100 3 1 node2\n")
    (Path(directory) / "task-0").write_text("1700000000000900 0 0 node1\n")   # a 0 never decides
    (Path(directory) / "stray").write_text("1 9 9 x\n")
    assert step_exit.end(directory, 137) == 3
    assert not Path(directory).exists()
    err = capsys.readouterr().err
    assert ("srun exit status 137 is that of the tasks srun ended after the first failure: task 1 "
            "(node 1, node2) ended first, its launcher with exit status 3") in err


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRIMUS_WORKSPACE", str(tmp_path))
    assert step_exit.main(["start"]) == 0
    directory = capsys.readouterr().out.strip()
    assert Path(directory).is_dir()
    assert step_exit.main(["end", directory, "143"]) == 0
    assert capsys.readouterr().out.strip() == "143"
    assert step_exit.main(["end", "", "5"]) == 0
    assert capsys.readouterr().out.strip() == "5"
    assert step_exit.main(["end", directory]) == 2
    # A workspace that cannot be made: no directory, srun's status stands.
    (tmp_path / "file").write_text("")
    assert step_exit.start({"PRIMUS_WORKSPACE": str(tmp_path / "file" / "ws")}) == ""
