"""Words and values that are not UTF-8 cross the container runtime byte for byte.

docker and podman hand the container its argv and environment in JSON (the OCI
runtime config, the engine's API), and Go's JSON encoder writes every byte that
is not valid UTF-8 as U+FFFD: a word ``caf\\xe9`` after ``--``, or an ``--env``
value with such bytes, would reach the job changed (direct mode keeps them).

So the container plan (python/primus_runner/launch/container.py) carries them
beside, in ``PRIMUS_CONTAINER_BYTES`` (ASCII, which JSON keeps): space-separated
triples

- ``arg N VALUE``   the N-th word from the end of the inner direct's arguments
- ``env NAME VALUE`` the value of NAME (forwarded or given with ``--env``)

where VALUE escapes every byte outside ``!``..``~`` and every backslash as
``\\xHH`` (bash's ``printf %b`` reads it back). The inner direct
(runner/lib/launch_env.sh, primus_container_bytes_restore) puts them back
before it reads its options, and unsets the carrier. Only values that are not
UTF-8 travel this way; the argv still names everything as before.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

CARRIER = "PRIMUS_CONTAINER_BYTES"


def is_utf8(text: str) -> bool:
    """False for a str that holds undecodable bytes (surrogateescape), as argv
    and os.environ give them."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def escape(text: str) -> str:
    """The bytes of ``text`` as printable ASCII with ``\\xHH`` escapes (pure)."""
    return "".join(chr(b) if 0x21 <= b <= 0x7E and b != 0x5C else f"\\x{b:02x}"
                   for b in text.encode("utf-8", "surrogateescape"))


def carrier(args: Sequence[str], values: Mapping[str, str]) -> tuple[str, list[str]]:
    """(carrier value, what it carries for a log line); ("", []) when every word
    of ``args`` (the inner direct's arguments) and every value is UTF-8."""
    fields: list[str] = []
    what: list[str] = []
    for index, word in enumerate(args):
        if not is_utf8(word):
            fields += ["arg", str(len(args) - index), escape(word)]
            what.append(f"inner direct argument {index + 1}")
    for name, value in values.items():
        if name != CARRIER and not is_utf8(value):
            fields += ["env", name, escape(value)]
            what.append(name)
    return " ".join(fields), what


def note(what: list[str]) -> str:
    return (f"{len(what)} value(s) that are not UTF-8 travel escaped in {CARRIER} "
            f"({', '.join(what)}): the runtime's JSON would turn those bytes into U+FFFD; "
            "the inner direct restores them byte for byte")
