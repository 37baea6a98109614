"""The one NUL record encoder (shellfmt.nul_records) and bash quoting."""
from __future__ import annotations

import subprocess

import pytest

from primus_runner.errors import UsageError
from primus_runner.shellfmt import bash_quote, export_lines, nul_records


def test_every_field_of_every_record_is_nul_terminated() -> None:
    data = nul_records([("cfg", "direct.nnodes", "2"), ("end", "", "")])
    assert data == b"cfg\0direct.nnodes\x002\0end\0\0\0"


def test_pairs_and_single_items_use_the_same_encoding() -> None:
    assert nul_records([("A", "x y")]) == b"A\0x y\0"
    assert nul_records([("A=1",), ("B=a\nb",)]) == b"A=1\0B=a\nb\0"


def test_undecodable_bytes_survive_round_trip() -> None:
    raw = b"caf\xe9"
    value = raw.decode("utf-8", "surrogateescape")
    assert nul_records([("K", value)]) == b"K\0caf\xe9\0"


@pytest.mark.parametrize(("record", "key"), [(("cfg", "direct.env", "a\0b"), "direct.env"),
                                              (("NAME", "x\0"), "NAME"),
                                              (("TOKEN=a\0b",), "TOKEN")])
def test_a_nul_byte_is_refused_naming_the_key(record: tuple[str, ...], key: str) -> None:
    with pytest.raises(UsageError) as info:
        nul_records([record])
    assert "NUL byte" in str(info.value)
    assert f"'{key}'" in str(info.value)


def test_bash_reads_back_what_was_encoded() -> None:
    data = nul_records([("cfg", "k", "it's \"quoted\" $HOME\n"), ("item", "k2", "")])
    script = ('while IFS= read -r -d "" a && IFS= read -r -d "" b && IFS= read -r -d "" c; do'
              ' printf "<%s|%s|%s>" "$a" "$b" "$c"; done')
    out = subprocess.run(["bash", "-c", script], input=data, capture_output=True, check=True).stdout
    assert out == b"<cfg|k|it's \"quoted\" $HOME\n><item|k2|>"


def test_export_lines_round_trip_through_bash() -> None:
    lines = export_lines({"A": "x'y z", "B": "$(date)"})
    out = subprocess.run(["bash", "-c", lines + 'printf "%s|%s" "$A" "$B"'], capture_output=True,
                         check=True, text=True).stdout
    assert out == "x'y z|$(date)"
    assert bash_quote("") == "''"
