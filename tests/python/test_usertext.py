"""User text helpers (python/primus_runner/usertext): plain help, "did you mean"."""
from __future__ import annotations

import pytest

from primus_runner import usertext


def test_plain_drops_rst_literals() -> None:
    assert usertext.plain("``config`` command: ``show``") == "config command: show"


@pytest.mark.parametrize(("word", "candidates", "hint"), [
    ("--modul", ["--module", "--script"], "; did you mean '--module'?"),   # a prefix
    ("dierct", ["direct", "slurm", "container"], "; did you mean 'direct'?"),  # transposed
    ("chek", ["list", "explain", "check"], "; did you mean 'check'?"),
    ("zzz", ["direct", "slurm"], ""),
    ("--n", ["--numa", "--no-numa"], "; did you mean '--numa'?"),  # not one prefix: closest
    ("", ["direct"], ""),
])
def test_did_you_mean(word: str, candidates: list[str], hint: str) -> None:
    assert usertext.did_you_mean(word, candidates) == hint


def test_strict_keeps_runtime_options_unflagged() -> None:
    ours = ["--image", "--runtime", "--name", "--env"]
    assert usertext.did_you_mean("--imag", ours, strict=True) == "; did you mean '--image'?"
    for runtime_option in ("--ipc", "--net", "--init", "--rm", "--shm-size"):
        assert usertext.did_you_mean(runtime_option, ours, strict=True) == ""


def test_suggesting_parser_subcommand_and_option(capsys: pytest.CaptureFixture[str]) -> None:
    parser = usertext.SuggestingParser(prog="p")
    sub = parser.add_subparsers(dest="cmd", required=True)
    show = sub.add_parser("show")
    show.add_argument("--format")
    with pytest.raises(SystemExit):
        parser.parse_args(["shwo"])
    assert "did you mean 'show'?" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser.parse_args(["show", "--formt", "json"])
    assert "did you mean '--format'?" in capsys.readouterr().err


def test_cli_suggest() -> None:
    assert usertext.main(["suggest", "dierct", "direct", "env"]) == 0
    assert usertext.main(["bogus"]) == 2
