"""The one --env FILE parser (python/primus_runner/env/envfile.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from primus_runner.env import commands as env_cmd
from primus_runner.env import envfile
from primus_runner.errors import MissingError, UsageError
from primus_runner.launch import container


def test_parse_reads_shell_assignments_and_skips_comments_and_blanks() -> None:
    text = ("# a comment\n\n  # indented comment\nA=1\nB=\"x y\"\nC=spaced   # note\n"
            "D=a=b\nexport E=5\nF=one two\n")
    assert envfile.parse(text, "f", env={}) == [("A", "1"), ("B", "x y"), ("C", "spaced"),
                                                 ("D", "a=b"), ("E", "5"), ("F", "one two")]


def test_expansion_from_earlier_lines_then_the_environment() -> None:
    # upstream sources the file, so BAZ=$FOO/x expands.
    text = ('FOO=/opt\nBAZ=$FOO/x\nQ="x"\nR="${HOME_DIR}/y"\nS=${UNSET:-dflt}\n'
            'T=${EMPTY:-d2}\nU=${EMPTY-d3}\nV="$FOO and ${NOPE}"\nW=${UNSET:-$FOO/z}\n')
    env = {"HOME_DIR": "/home/u", "EMPTY": "", "FOO": "ignored: the file's line wins"}
    assert envfile.parse(text, "f", env=env) == [
        ("FOO", "/opt"), ("BAZ", "/opt/x"), ("Q", "x"), ("R", "/home/u/y"), ("S", "dflt"),
        ("T", "d2"), ("U", ""), ("V", "/opt and "), ("W", "/opt/z")]


def test_quotes_and_escapes() -> None:
    text = ("A='$FOO literal \"x\"'\nB=\"a \\\"q\\\" \\$FOO \\\\ b\"\nC=a\\ b\nD=x'y z'\"$FOO\"\n"
            "E=cost$\nF='$(date)'\nG='`id`'\nH=\\$(date)\n")
    assert envfile.parse(text, "f", env={"FOO": "1"}) == [
        ("A", '$FOO literal "x"'), ("B", 'a "q" $FOO \\ b'), ("C", "a b"), ("D", "xy z1"),
        ("E", "cost$"), ("F", "$(date)"), ("G", "`id`"), ("H", "$(date)")]


@pytest.mark.parametrize("value", ["$(touch pwned)", "`touch pwned`", '"$(touch pwned)"',
                                   '"`touch pwned`"', "${X:=y}", '"open', "'open",
                                   "${X"])
def test_command_substitution_and_bad_values_are_refused_never_run(
        value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match=r"--env file f line 2 \(BAD\): .*nothing in it is ever run"):
        envfile.parse(f"OK=1\nBAD={value}\n", "f", env={})
    assert not (tmp_path / "pwned").exists()


def test_read_expands_from_the_given_environment_else_os_environ(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "x.env"
    path.write_text("A=$WHO-x\n")
    monkeypatch.setenv("WHO", "env")
    assert envfile.read(str(path)) == [("A", "env-x")]
    assert envfile.read(str(path), env={"WHO": "given"}) == [("A", "given-x")]


@pytest.mark.parametrize("line", ["9BAD=1", "NOEQUALS", "A B=1", "=value", "export 1X=2"])
def test_parse_refuses_bad_lines_naming_file_and_line(line: str) -> None:
    with pytest.raises(UsageError, match=r"--env file f line 2 is not KEY=VALUE"):
        envfile.parse(f"OK=1\n{line}\n", "f")


def test_read_missing_file_is_missing_error(tmp_path: Path) -> None:
    with pytest.raises(MissingError, match="not found"):
        envfile.read(str(tmp_path / "none.env"))


def test_cli_prints_nul_items_or_one_error_item(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    good = tmp_path / "good.env"
    good.write_text("A=1\nexport B=\"two words\"\n")
    assert envfile.main([str(good)]) == 0
    assert capsysbinary.readouterr().out == b"A=1\0B=two words\0"
    bad = tmp_path / "bad.env"
    bad.write_text("9X=1\n")
    assert envfile.main([str(bad)]) == 0
    out = capsysbinary.readouterr().out
    assert out.startswith(b"!2 --env file ") and out.endswith(b"\0") and b"line 1" in out
    assert envfile.main([str(tmp_path / "none.env")]) == 0
    assert capsysbinary.readouterr().out.startswith(b"!1 ")


def test_every_python_entry_point_reads_files_the_same_way(tmp_path: Path) -> None:
    path = tmp_path / "x.env"
    path.write_text("# c\nexport A=1\nB='q'\nC=$A-$B\n")
    expected = [("A", "1"), ("B", "q"), ("C", "1-q")]
    assert container.env_item(str(path), "--env", {}) == expected
    assert list(env_cmd.read_env_file(str(path)).items()) == expected


def test_cli_help_and_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert envfile.main(["--help"]) == 0
    assert "KEY=VALUE" in capsys.readouterr().out
    assert envfile.main([]) == 2
    assert "usage:" in capsys.readouterr().err
