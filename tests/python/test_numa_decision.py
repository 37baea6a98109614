"""The NUMA binding decision (launch/numa.py), asked once per launch by the launch
helper: --numa / --no-numa > config direct.numa: true / false > ENABLE_NUMA_BINDING=1 > off
(docs/run-on-one-node.md's --numa row, docs/coming-from-upstream.md's ENABLE_NUMA_BINDING row)."""
from __future__ import annotations

import pytest

from primus_runner.launch import numa
from primus_runner.launch.helper import fast_parse

DEFAULT_WHY = "--numa, direct.numa: true or ENABLE_NUMA_BINDING=1 bind"


@pytest.mark.parametrize(("cli", "config", "enable", "bind", "text"), [
    ("1", "0", "0", "1", "on (--numa)"),
    ("0", "1", "1", "0", "off (--no-numa)"),
    ("", "1", "0", "1", "on (config direct.numa: true)"),
    ("", "1", "", "1", "on (config direct.numa: true)"),
    ("", "0", "1", "0", "off (config direct.numa: false)"),
    ("", "auto", "1", "1", "on (ENABLE_NUMA_BINDING=1)"),
    ("", "", "1", "1", "on (ENABLE_NUMA_BINDING=1)"),
    ("", "0", "", "0", "off (config direct.numa: false)"),
    ("", "auto", "0", "0", f"off (default, config direct.numa: auto; {DEFAULT_WHY})"),
    ("", "", "", "0", f"off (default; {DEFAULT_WHY})"),
    ("", "", "true", "0", f"off (default; {DEFAULT_WHY})"),  # only 1 is on, as the shell read it
])
def test_precedence(cli: str, config: str, enable: str, bind: str, text: str) -> None:
    env = {"ENABLE_NUMA_BINDING": enable} if enable else {}
    assert numa.decide(cli, config, env) == (bind, text)


def test_the_helper_takes_the_flag_without_argparse() -> None:
    assert fast_parse(["serve", "--numa", "1"]) is not None
    assert fast_parse(["serve", "--numa", "yes"]) is None  # argparse then names the choices
