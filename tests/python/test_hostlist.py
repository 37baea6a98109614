"""Slurm hostlist expand/compress (docs/configuration.md "Detection and rank mapping");
expected values written by hand."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from primus_runner.errors import UsageError
from primus_runner.scheduler.hostlist import HostlistError, compress, count, expand, first_host

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("expr, hosts", [
    ("a[1-3,7]", ["a1", "a2", "a3", "a7"]),
    ("n[001-003]", ["n001", "n002", "n003"]),
    ("n[098-101]", ["n098", "n099", "n100", "n101"]),
    ("n[8-10]", ["n8", "n9", "n10"]),
    ("n[1-2]-ib", ["n1-ib", "n2-ib"]),
    ("r[1-2]n[01-03]", ["r1n01", "r1n02", "r1n03", "r2n01", "r2n02", "r2n03"]),
    ("r[1-2]n[1-2]-ib,x5", ["r1n1-ib", "r1n2-ib", "r2n1-ib", "r2n2-ib", "x5"]),
    ("a1,b[2-3] c4\td5", ["a1", "b2", "b3", "c4", "d5"]),
    ("n[3,1,2]", ["n3", "n1", "n2"]),
    ("n[1,1]", ["n1", "n1"]),
    ("host", ["host"]),
    ("node-1.cluster,node-2.cluster", ["node-1.cluster", "node-2.cluster"]),
    ("[7-8]x", ["7x", "8x"]),
    ("n[0]", ["n0"]),
    ("a,,b,", ["a", "b"]),
    ("", []),
])
def test_expand_examples(expr: str, hosts: list[str]) -> None:
    assert expand(expr) == hosts


@pytest.mark.parametrize("expr, offending", [
    ("n[1-3", "[1-3"),
    ("n1-3]", "n1-3]"),
    ("n[[1-2]]", "[[1-2]"),
    ("n[5-3]", "5-3"),
    ("n[a-c]", "a-c"),
    ("n[1-b]", "1-b"),
    ("n[]", "n[]"),
    ("n[1,,2]", "n[1,,2]"),
    ("n[-1]", "-1"),
    ("n$(reboot)", "n$(reboot)"),
    ("n;rm", "n;rm"),
])
def test_malformed_expressions_name_the_offending_part(expr: str, offending: str) -> None:
    with pytest.raises(HostlistError) as info:
        expand(expr)
    assert f"'{offending}'" in str(info.value)
    assert isinstance(info.value, UsageError)


def test_more_than_a_million_hosts_is_refused_before_expanding() -> None:
    with pytest.raises(HostlistError, match="more than 1,000,000 hosts"):
        expand("n[0-1000000]")          # 1,000,001 hosts
    with pytest.raises(HostlistError, match="more than 1,000,000 hosts"):
        count("r[0-999]n[0-999],x")     # 1,000,001 hosts, never expanded
    assert count("r[0-999]n[0-999]") == 1_000_000
    assert len(expand("n[1-5]", limit=5)) == 5
    with pytest.raises(HostlistError, match="more than 4 hosts"):
        expand("n[1-5]", limit=4)


def test_first_host_and_count_do_not_expand() -> None:
    assert first_host("r[2-3]n[005-006]-ib,q") == "r2n005-ib"
    assert first_host("gpu17,gpu[1-2]") == "gpu17"
    # 10^6 hosts: would take far longer if expanded, and the list is still checked.
    assert first_host("n[000000-999999]") == "n000000"
    assert count("n[000000-999999]") == 1_000_000
    with pytest.raises(HostlistError):
        first_host("n[1-2],bad[")
    with pytest.raises(HostlistError, match="names no host"):
        first_host(" , ")


@pytest.mark.parametrize("hosts, expr", [
    (["n001", "n002", "n003", "n010"], "n[001-003,010]"),
    (["n8", "n9", "n10"], "n[8-10]"),
    (["n08", "n09", "n10"], "n[08-10]"),
    (["n9", "n010"], "n[9,010]"),
    (["n1-ib", "n2-ib", "n4-ib"], "n[1-2,4]-ib"),
    (["r1n01", "r1n02", "r2n01"], "r1n[01-02],r2n01"),
    (["a", "b", "c7"], "a,b,c7"),
    (["n3", "n1", "n2"], "n[3,1-2]"),
    (["n1", "n1"], "n[1,1]"),
    ([], ""),
])
def test_compress_examples(hosts: list[str], expr: str) -> None:
    assert compress(hosts) == expr
    assert expand(expr) == hosts


def test_compress_rejects_names_that_cannot_be_written() -> None:
    for bad in ("a,b", "n[1]", "x y", "", "n$1"):
        with pytest.raises(HostlistError):
            compress(["ok1", bad])


# --- property tests -------------------------------------------------------
_prefix = st.text(alphabet="abcxyz-._", min_size=0, max_size=4)
_range = st.tuples(st.integers(0, 120), st.integers(0, 15), st.integers(1, 4)).map(
    lambda t: f"{t[0]:0{t[2]}d}" if t[1] == 0 else f"{t[0]:0{t[2]}d}-{t[0] + t[1]}")
_group = st.lists(_range, min_size=1, max_size=3).map(lambda rs: "[" + ",".join(rs) + "]")
_item = st.lists(st.tuples(_prefix, _group), min_size=0, max_size=2).flatmap(
    lambda parts: st.tuples(st.just(parts), _prefix)).map(
    lambda t: "".join(p + g for p, g in t[0]) + t[1]).filter(bool)
_expr = st.lists(_item, min_size=1, max_size=4).map(",".join)


@settings(max_examples=300, deadline=None)
@given(_expr)
def test_compress_of_expand_expands_back_to_the_same_hosts(expr: str) -> None:
    hosts = expand(expr)
    assert expand(compress(hosts)) == hosts
    assert count(expr) == len(hosts)
    if hosts:
        assert first_host(expr) == hosts[0]


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="n01-9[],x .\t$-", max_size=24) | st.text(max_size=16))
def test_random_strings_expand_or_raise_hostlist_error(text: str) -> None:
    try:
        hosts = expand(text)
    except HostlistError:
        return
    assert all(h and "," not in h and "[" not in h for h in hosts)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.from_regex(r"\A[a-z]{1,3}[0-9]{0,4}(-ib)?\Z"), max_size=30))
def test_compress_round_trips_arbitrary_host_lists(hosts: list[str]) -> None:
    assert expand(compress(hosts)) == hosts


# --- CLI -----------------------------------------------------------------
def _cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    return subprocess.run([sys.executable, "-m", "primus_runner", "hostlist", *args],
                          input=stdin, capture_output=True, text=True, env=env)


def test_cli_expand_compress_count_first() -> None:
    assert _cli("expand", "r[1-2]n[1-2]").stdout == "r1n1\nr1n2\nr2n1\nr2n2\n"
    assert _cli("compress", "n1", "n2", "n3").stdout == "n[1-3]\n"
    assert _cli("compress", stdin="n01\nn02 n04\n").stdout == "n[01-02,04]\n"
    assert _cli("count", "n[1-4],x").stdout == "5\n"
    assert _cli("first", "n[7-9]").stdout == "n7\n"
    bad = _cli("expand", "n[3-1]")
    assert bad.returncode == 2
    assert "'3-1'" in bad.stderr and bad.stdout == ""
    assert _cli("--help").returncode == 0
    assert _cli("frobnicate").returncode == 2
