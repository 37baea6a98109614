"""container_bytes: values that are not UTF-8 carried past the runtime's JSON, and
their restoration by the inner direct (runner/lib/launch_env.sh, real bash)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from primus_runner.launch import container_bytes as cb

REPO = Path(__file__).resolve().parents[2]


def fs(raw: bytes) -> str:
    """The str Python gives for these bytes in argv or os.environ."""
    return os.fsdecode(raw)


def test_utf8_is_told_apart_from_undecodable_bytes() -> None:
    assert cb.is_utf8("café ü €")
    assert not cb.is_utf8(fs(b"caf\xe9"))
    assert not cb.is_utf8(fs(b"\xff\xfe"))


def test_escape_keeps_printable_ascii_and_escapes_the_rest() -> None:
    assert cb.escape("a-Z_0/=%") == "a-Z_0/=%"
    assert cb.escape(fs(b"caf\xe9")) == "caf\\xe9"
    assert cb.escape("a b\\c\n") == "a\\x20b\\x5cc\\x0a"
    assert cb.escape("é") == "\\xc3\\xa9"   # every byte >= 0x80, whatever the word


def test_carrier_names_positions_from_the_end_and_only_undecodable_values() -> None:
    args = ["--env", "X", "--", fs(b"\xff\xfe"), "plain", fs(b"caf\xe9")]
    value, what = cb.carrier(args, {"OK": "fine é", "BAD": fs(b"v\xe9"), cb.CARRIER: fs(b"\xff")})
    assert value == "arg 3 \\xff\\xfe arg 1 caf\\xe9 env BAD v\\xe9"
    assert what == ["inner direct argument 4", "inner direct argument 6", "BAD"]
    assert cb.carrier(["--", "é", "plain"], {"OK": "ü"}) == ("", [])
    assert "3 value(s) that are not UTF-8" in cb.note(what)


def _restore(carrier: str, args: list[bytes]) -> list[bytes]:
    """Run the inner direct's restore (real bash) and return its words, then
    the values of BAD and CARRIER as it left them."""
    script = (f'source "{REPO}/runner/lib/common.sh"; source "{REPO}/runner/lib/launch_env.sh"; '
              'primus_container_bytes_restore out "$@"; '
              'printf "%s\\0" "${out[@]}" "${BAD-<unset>}" "${PRIMUS_CONTAINER_BYTES-<unset>}"')
    env = {**os.environ, "PRIMUS_CONTAINER_BYTES": carrier, "LC_ALL": "C.UTF-8"}
    env.pop("BAD", None)
    done = subprocess.run([b"bash", b"-c", script.encode(), b"_", *args], env=env,
                          capture_output=True, check=True)
    return done.stdout.split(b"\0")[:-1]


def test_bash_restores_every_byte_and_unsets_the_carrier() -> None:
    raw_words = [b"--env", b"BAD", b"--", b"\xff\xfe", b"plain \\x41 %b", b"caf\xe9\\n"]
    raw_bad = b"v\xe9 \\ \x01"
    value, _ = cb.carrier([fs(w) for w in raw_words], {"BAD": fs(raw_bad)})
    # What the runtime delivers: every undecodable byte replaced by U+FFFD.
    mangled = [w.decode("utf-8", "replace").encode() for w in raw_words]
    assert mangled != raw_words
    got = _restore(value, mangled)
    assert got == [*raw_words, raw_bad, b"<unset>"]


def test_bash_ignores_a_record_it_cannot_place() -> None:
    got = _restore("arg 9 x env 1BAD y what z z", [b"a"])
    assert got == [b"a", b"<unset>", b"<unset>"]
