"""RCCL traffic classes from `nicctl show qos` (network/qos.py), which the hook
runner/helpers/hooks/03_detect_nccl_ib_tc.sh asks once; tests/bats/hooks_network.bats
runs the hook with a stub nicctl."""
from __future__ import annotations

from pathlib import Path

import pytest

from primus_runner.network.qos import dscp_of, traffic_classes

QOS = (Path(__file__).resolve().parents[1] / "fixtures" / "hooks" / "nicctl" / "show_qos.txt").read_text()


def test_the_reference_text() -> None:
    out = traffic_classes(QOS)
    assert out[-1] == ("tc", "104", "192")
    assert out[0][1] == "nicctl: no-drop priority 3 -> DSCP 26; strict priority 6 -> FIFO DSCP 48"


@pytest.mark.parametrize(("edit", "last"), [
    (lambda t: "\n".join(x for x in t.splitlines() if "strict" not in x), ("tc", "104", "104")),
    (lambda t: t.replace(": 26 ==>", ": 10 ==>"), ("tc", "40", "192")),
    (lambda t: t.replace(": 48 ==>", ": x ==>"), ("tc", "104", "104")),   # strict DSCP not a number
    (lambda t: t.replace(": 26 ==>", ": 2x6 ==>"),
     ("skip", "no numeric DSCP for no-drop priority 3 in 'nicctl show qos';", "")),
    (lambda t: t.replace("no-drop priorities   : 3", "no-drop priorities   : none"),
     ("skip", "no PFC no-drop priority in 'nicctl show qos';", "")),
    (lambda t: "", ("skip", "no PFC no-drop priority in 'nicctl show qos';", "")),
])
def test_variants(edit: object, last: tuple[str, str, str]) -> None:
    assert callable(edit)
    assert traffic_classes(edit(QOS))[-1] == last


@pytest.mark.parametrize(("priority", "dscp"), [("3", "26"), ("6", "48"), ("0", ""), ("7", "")])
def test_dscp_of_reads_the_first_mapping_line_not_the_bitmap(priority: str, dscp: str) -> None:
    assert dscp_of(QOS, priority) == dscp
