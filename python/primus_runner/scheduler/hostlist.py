"""Slurm hostlist expressions: expand, compress, count and first host.

Syntax (docs/configuration.md "Detection and rank mapping", Slurm's rules):

- items separated by commas or whitespace outside brackets: ``a1,b[1-2] c3``;
- a bracket holds comma-separated numbers and ranges: ``a[1-3,7]``;
- zero padding: a range's width is the length of its low bound as written,
  ``n[001-128]`` gives ``n001`` ... ``n128`` and ``n[8-10]`` gives ``n8 n9 n10``;
- text may follow a bracket: ``n[1-2]-ib`` gives ``n1-ib n2-ib``;
- several bracket groups in one item, expanded in Slurm's order (the leftmost
  group varies slowest): ``r[1-2]n[01-02]`` gives ``r1n01 r1n02 r2n01 r2n02``;
- ranges inside a bracket keep the order written; nothing is sorted.

Errors (unbalanced or nested brackets, an empty bracket, a reversed or
non-numeric range, a character that cannot be in a host name, more hosts than
the limit) raise ``HostlistError`` naming the offending part. Parsing is
linear in the length of the expression; ``count`` and ``first_host`` never
expand; ``expand`` is linear in the number of hosts.
"""
from __future__ import annotations

import sys
from collections.abc import Iterable
from itertools import product

from primus_runner.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs ~8 ms of every launch
    from typing import Any

DEFAULT_LIMIT = 1_000_000

_HOST_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_"
_NON_DIGITS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-_"
# str.translate tables: delete every allowed character, so what is left is bad.
_DROP_HOST = str.maketrans("", "", _HOST_CHARS)
_DROP_EXPR = str.maketrans("", "", _HOST_CHARS + ",[] \t\n\r")
_TO_COMMA = str.maketrans(" \t\n\r", ",,,,")
_ACCEPTED = ("accepted: comma-separated items like n[001-128], a[1-3,7], n[1-2]-ib, "
             "r[1-2]n[01-04], each range lo-hi with lo <= hi")
_HOST_ACCEPTED = "accepted: letters, digits, '.', '-' and '_'"
_DIGITS = frozenset("0123456789")
_DROP_DIGITS_COMMA = str.maketrans("", "", "0123456789,")


class HostlistError(UsageError):
    """A malformed hostlist expression or host name (exit 2)."""


# A range is (lo, hi, width); a group is a list of ranges; an item is either a
# plain host (str) or a list of parts, each a literal string or a group.
Range = tuple[int, int, int]


def _shown(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _error(expr: str, what: str, part: str, hint: str = "") -> HostlistError:
    return HostlistError(f"invalid hostlist '{_shown(expr)}': {what} '{_shown(part, 60)}'"
                         f"{hint}; {_ACCEPTED}")


def _item_at(text: str, offset: int) -> str:
    """The top-level item of ``text`` (commas only) that holds ``offset`` (error path)."""
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(depth - 1, 0)
        elif ch == "," and not depth:
            if i >= offset:
                return text[start:i]
            start = i + 1
    return text[start:]


def _parse_group(expr: str, text: str, opened: int, body: str) -> list[Range]:
    if not body:
        raise _error(expr, "empty brackets in", _item_at(text, opened))
    specs = body.split(",")
    if "-" not in body and "" not in specs and not body.translate(_DROP_DIGITS_COMMA):
        # Fast path: a list of single numbers, each its own width.
        return [(v, v, len(spec)) for v, spec in zip(map(int, specs), specs, strict=True)]
    ranges: list[Range] = []
    for spec in specs:
        lo_s, dash, hi_s = spec.partition("-")
        if not lo_s or not _DIGITS.issuperset(lo_s) or (
                dash and (not hi_s or not _DIGITS.issuperset(hi_s))):
            raise _error(expr, "non-numeric range", spec or f"[{body}]",
                         f" in '{_shown(_item_at(text, opened), 60)}'")
        lo = int(lo_s)
        hi = int(hi_s) if dash else lo
        if lo > hi:
            raise _error(expr, "reversed range", spec,
                         f" (low bound above high bound; write {hi_s}-{lo_s})")
        ranges.append((lo, hi, len(lo_s)))
    return ranges


def _items(expr: str) -> list[Any]:
    """Top-level items of ``expr``; checks characters, bracket balance and nesting."""
    leftover = expr.translate(_DROP_EXPR)
    text = expr.translate(_TO_COMMA)
    if leftover:
        bad = leftover[0]
        raise _error(expr, f"character {bad!r} not allowed in a host name in",
                     _item_at(text, expr.index(bad)))
    if "[" not in text and "]" not in text:
        return [item for item in text.split(",") if item]
    items: list[Any] = []
    cur: list[Any] = []
    pos = 0
    end = len(text)
    while True:
        opened = text.find("[", pos)
        seg_end = end if opened < 0 else opened
        stray = text.find("]", pos, seg_end)
        if stray >= 0:
            raise _error(expr, "']' without '[' in", _item_at(text, stray))
        pieces = text[pos:seg_end].split(",")
        if pieces[0]:
            cur.append(pieces[0])
        if len(pieces) > 1:
            if cur:
                items.append(cur)
            items.extend(p for p in pieces[1:-1] if p)
            cur = [pieces[-1]] if pieces[-1] else []
        if opened < 0:
            break
        closed = text.find("]", opened + 1)
        if closed < 0:
            raise _error(expr, "unbalanced '[' (no closing ']') in", text[opened:])
        nested = text.find("[", opened + 1, closed)
        if nested >= 0:
            raise _error(expr, "nested '[' in", text[opened:closed + 1])
        cur.append(_parse_group(expr, text, opened, text[opened + 1:closed]))
        pos = closed + 1
    if cur:
        items.append(cur)
    return items


def _group_size(group: list[Range]) -> int:
    return sum(hi - lo + 1 for lo, hi, _ in group)


def _item_size(parts: str | list[Any]) -> int:
    if isinstance(parts, str):
        return 1
    size = 1
    for part in parts:
        if not isinstance(part, str):
            size *= _group_size(part)
    return size


def parse(expr: str, limit: int = DEFAULT_LIMIT) -> list[Any]:
    """Parse and check ``expr`` without expanding it; return its items."""
    if not isinstance(expr, str):
        raise HostlistError(f"hostlist must be a string, got {type(expr).__name__}")
    items = _items(expr)
    if all(isinstance(item, str) for item in items):
        if len(items) > limit:
            raise HostlistError(f"invalid hostlist '{_shown(expr)}': more than {limit:,} hosts; "
                                f"accepted: at most {limit:,} hosts per expression")
        return items
    total = 0
    for parts in items:
        total += _item_size(parts)
        if total > limit:
            raise HostlistError(f"invalid hostlist '{_shown(expr)}': more than {limit:,} hosts; "
                                f"accepted: at most {limit:,} hosts per expression")
    return items


def count(expr: str, limit: int = DEFAULT_LIMIT) -> int:
    """Number of hosts ``expr`` names (duplicates included), without expanding."""
    return sum(_item_size(parts) for parts in parse(expr, limit))


def _group_values(group: list[Range]) -> list[str]:
    values: list[str] = []
    append = values.append
    for lo, hi, width in group:
        if lo == hi:
            append(str(lo).zfill(width))
        elif width == 1:
            values.extend(map(str, range(lo, hi + 1)))
        else:
            values.extend([str(v).zfill(width) for v in range(lo, hi + 1)])
    return values


def _expand_item(parts: list[Any]) -> list[str]:
    if isinstance(parts, str):
        return [parts]
    groups = [i for i, p in enumerate(parts) if not isinstance(p, str)]
    if not groups:
        return ["".join(parts)]
    if len(groups) == 1:
        g = groups[0]
        head = "".join(parts[:g])
        tail = "".join(parts[g + 1:])
        return [f"{head}{v}{tail}" for v in _group_values(parts[g])]
    choices = [[p] if isinstance(p, str) else _group_values(p) for p in parts]
    return ["".join(combo) for combo in product(*choices)]


def expand(expr: str, limit: int = DEFAULT_LIMIT) -> list[str]:
    """All hosts of ``expr`` in Slurm's order. Raises HostlistError."""
    items = parse(expr, limit)
    hosts: list[str] = []
    for parts in items:
        if isinstance(parts, str):
            hosts.append(parts)
        else:
            hosts.extend(_expand_item(parts))
    return hosts


def _first_value(group: list[Range]) -> str:
    lo, _, width = group[0]
    return str(lo).zfill(width)


def first_host(expr: str) -> str:
    """The first host of ``expr`` (for MASTER_ADDR) without expanding the list.

    The whole expression is still checked, so a typo anywhere is reported.
    """
    items = parse(expr)
    if not items:
        raise HostlistError(f"invalid hostlist '{_shown(expr)}': it names no host; {_ACCEPTED}")
    first = items[0]
    if isinstance(first, str):
        return first
    return "".join(p if isinstance(p, str) else _first_value(p) for p in first)


def _fmt(value: int, width: int) -> str:
    return str(value).zfill(width)


def compress(hosts: Iterable[str]) -> str:
    """One expression whose expansion is exactly ``hosts``, in the same order.

    Consecutive hosts that differ only in their last number are merged into a
    bracket (``n[001-004,010]-ib``); padding is kept exact.
    """
    hosts = list(hosts)
    for host in hosts:
        if not isinstance(host, str) or not host:
            raise HostlistError(f"invalid host name {host!r}: empty; {_HOST_ACCEPTED}")
    leftover = "".join(hosts).translate(_DROP_HOST)
    if leftover:
        bad = next(h for h in hosts if h.translate(_DROP_HOST))
        raise HostlistError(f"invalid host name '{_shown(bad, 60)}': character "
                            f"{bad.translate(_DROP_HOST)[0]!r} is not allowed; {_HOST_ACCEPTED}")
    # groups: [prefix, suffix, ranges] where a range is [lo, hi, width], or [literal].
    groups: list[list[Any]] = []
    prefix = suffix = None
    ranges: list[list[int]] = []
    last: list[int] = []
    for host in hosts:
        stem = host.rstrip(_NON_DIGITS)
        if not stem:
            groups.append([host])
            prefix = None
            continue
        head = stem.rstrip("0123456789")
        digits = stem[len(head):]
        tail = host[len(stem):]
        value = int(digits)
        if head == prefix and tail == suffix:
            width = last[2]
            if value == last[1] + 1 and (len(digits) == width or (
                    len(digits) > width and digits[0] != "0")):
                last[1] = value
                continue
            last = [value, value, len(digits)]
            ranges.append(last)
            continue
        prefix, suffix = head, tail
        last = [value, value, len(digits)]
        ranges = [last]
        groups.append([prefix, suffix, ranges])
    out: list[str] = []
    for group in groups:
        if len(group) == 1:
            out.append(group[0])
            continue
        head, tail, rngs = group
        if len(rngs) == 1 and rngs[0][0] == rngs[0][1]:
            out.append(f"{head}{_fmt(rngs[0][0], rngs[0][2])}{tail}")
            continue
        body = ",".join(_fmt(lo, w) if lo == hi else f"{_fmt(lo, w)}-{_fmt(hi, w)}"
                        for lo, hi, w in rngs)
        out.append(f"{head}[{body}]{tail}")
    return ",".join(out)


USAGE = """usage: python3 -m primus_runner hostlist ACTION [options] ARGS

Expand or compress Slurm hostlist expressions (Slurm's order, zero padding,
suffixes, several bracket groups, comma lists).

actions:
  expand EXPR...      print one host per line (several EXPRs are joined by commas)
  compress [HOST...]  print one expression naming exactly these hosts, in order;
                      with no HOST, read host names (whitespace-separated) on stdin
  count EXPR...       print the number of hosts, without expanding
  first EXPR          print the first host, without expanding (MASTER_ADDR)

options:
  --limit N           refuse expressions naming more than N hosts (default 1,000,000)
  -h, --help          show this help

exit codes: 0 ok, 2 malformed expression (the offending part is named)"""


def main(argv: list[str]) -> int:
    # A hand-rolled parser: argparse would cost ~10 ms on the slurm-entry path.
    args = list(argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if args else 2
    action, rest = args[0], args[1:]
    if action not in ("expand", "compress", "count", "first"):
        raise UsageError(f"hostlist: unknown action '{action}'; accepted: expand, compress, "
                         "count, first. Run 'python3 -m primus_runner hostlist --help'.")
    limit = DEFAULT_LIMIT
    operands: list[str] = []
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg in ("-h", "--help"):
            print(USAGE)
            return 0
        if arg == "--":
            operands.extend(rest[i + 1:])
            break
        if arg == "--limit" or arg.startswith("--limit="):
            if arg == "--limit":
                i += 1
                value = rest[i] if i < len(rest) else ""
            else:
                value = arg.partition("=")[2]
            if not value.isdigit() or int(value) < 1:
                raise UsageError(f"hostlist: --limit '{value}' is not a positive integer; "
                                 "accepted: e.g. --limit 100000")
            limit = int(value)
        elif arg.startswith("-") and len(arg) > 1:
            raise UsageError(f"hostlist: unknown option '{arg}'; accepted: --limit N, --help")
        else:
            operands.append(arg)
        i += 1
    if action == "compress":
        hosts = operands if operands else sys.stdin.read().split()
        sys.stdout.write(compress(hosts) + "\n")
        return 0
    if not operands:
        raise UsageError(f"hostlist {action}: missing EXPR; e.g. "
                         f"'python3 -m primus_runner hostlist {action} n[001-004]'")
    if action == "first":
        if len(operands) != 1:
            raise UsageError(f"hostlist first: expected one EXPR, got {len(operands)}")
        sys.stdout.write(first_host(operands[0]) + "\n")
        return 0
    expr = ",".join(operands)
    if action == "count":
        sys.stdout.write(f"{count(expr, limit)}\n")
        return 0
    hosts = expand(expr, limit)
    if hosts:
        sys.stdout.write("\n".join(hosts) + "\n")
    return 0
