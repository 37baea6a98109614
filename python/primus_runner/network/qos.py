"""RCCL traffic classes from an AMD Pensando (ionic) NIC's QoS set-up.

runner/helpers/hooks/03_detect_nccl_ib_tc.sh (gate USING_AINIC=1) runs
``nicctl show qos`` and hands its output to this module once; it decides:

- the no-drop priority P: the last field of the first "PFC no-drop priorities" line;
- DSCP(P): from the first line with "DSCP" (not "bitmap") ending "==> priority : P":
  the text after its colon up to the arrow, blanks removed, digits only;
- the strict priority: the first field of the first line containing "strict"
  (any case); the FIFO DSCP is DSCP(strict) when that is a number, else the data DSCP;
- NCCL_IB_TC = data DSCP x 4 and NCCL_IB_FIFO_TC = FIFO DSCP x 4 (DSCP 26 -> 104,
  48 -> 192: the traffic class carries the DSCP in its upper six bits).

Output: NUL records ``kind\\0a\\0b\\0``: ``info MESSAGE``, then ``tc NCCL_IB_TC
NCCL_IB_FIFO_TC``; or ``skip REASON`` when the text says neither.
"""
from __future__ import annotations

import re
import sys

Record = tuple[str, str, str]

_BLANKS = re.compile(r"\s", re.ASCII)


def _digits(value: str) -> bool:
    return value.isascii() and value.isdigit()


def dscp_of(qos: str, priority: str) -> str:
    """The DSCP mapped to PRIORITY (digits; '' when the first mapping line for it is not a number)."""
    arrow = re.compile(r"==>\s*priority\s*:\s*" + re.escape(priority) + r"\s*$", re.ASCII)
    for line in qos.splitlines():
        if "DSCP" not in line or "bitmap" in line or not arrow.search(line):
            continue
        value = _BLANKS.sub("", line.partition(":")[2].partition("==>")[0])
        return value if _digits(value) else ""
    return ""


def traffic_classes(qos: str) -> list[Record]:
    """The records for the text of ``nicctl show qos``."""
    priority = strict = ""
    for line in qos.splitlines():
        fields = line.split()
        if not priority and "PFC no-drop priorities" in line and fields:
            priority = fields[-1]
        if not strict and "strict" in line.lower() and fields:
            strict = fields[0]
    if not _digits(priority):
        return [("skip", "no PFC no-drop priority in 'nicctl show qos';", "")]
    data = dscp_of(qos, priority)
    if not data:
        return [("skip", f"no numeric DSCP for no-drop priority {priority} in 'nicctl show qos';", "")]
    fifo = data
    if _digits(strict):
        fifo = dscp_of(qos, strict) or fifo
    return [("info", f"nicctl: no-drop priority {priority} -> DSCP {data}; strict priority {strict or 'none'}"
                     f" -> FIFO DSCP {fifo}", ""),
            ("tc", str(int(data) * 4), str(int(fifo) * 4))]


def main() -> int:
    from primus_runner.shellfmt import nul_records

    text = sys.stdin.buffer.read().decode("utf-8", "surrogateescape")
    sys.stdout.buffer.write(nul_records(traffic_classes(text)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
