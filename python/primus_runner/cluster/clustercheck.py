"""The cluster check: what must match across nodes, compared before the workload starts.

Run on EVERY multi-node launch (not only ``preflight``) by the launch helper
(``launch serve``), right after ``env check`` of the final launch environment,
so the shell part stays the one call it already makes. Skipped for one node,
under ``--dry-run``, with ``PRIMUS_SKIP_VALIDATION=1`` and with
``PRIMUS_CLUSTER_CHECK=0``.

What is compared (registry field ``scope``, python/primus_runner/env/registry.py):

- every ``cluster-uniform`` variable (algorithms, protocols, timeouts, world
  size, ...; unregistered NCCL_*/RCCL_*/HSA_*/NEURON_RT_*/XLA_* names count as
  such): identical value, or unset, on every node. Secret values are compared
  by SHA-256 and never sent or shown;
- ``per-node`` network variables by what they mean on each node (meanings.py):
  the IPv4 subnet(s) and interface class of the interfaces NCCL_SOCKET_IFNAME /
  GLOO_SOCKET_IFNAME / IP_INTERFACE select, how many ACTIVE ports NCCL_IB_HCA
  selects and their link layer(s), and the GID type and family
  NCCL_IB_GID_INDEX points at (``eno1`` vs ``eth0`` on the same subnet, or GID
  index 3 vs 7 that are both RoCE v2 IPv4, agree; one node whose port is down
  and whose list is one port shorter does not). A mismatch names the odd node
  (the one outside the largest group of agreeing nodes, else the one that left
  a port out) and why (what it left out);
- versions readable on the node (``versions()``): ROCm (``/opt/rocm/.info/version``),
  the RCCL library file (``/opt/rocm/lib/librccl.so.X``), the amdgpu and neuron
  driver modules (``/sys/module/<mod>/version``), the Neuron runtime library
  (``/opt/aws/neuron/lib/libnrt.so.X``), the CPU vendor (``/proc/cpuinfo``) and
  torch's version from its ``version.py``, never imported (all in
  python/primus_runner/hardware/versions.py). The preflight workload adds what torch
  reports itself (torch, HIP, NCCL/RCCL as torch loads them).

Names in ``PRIMUS_CLUSTER_CHECK_IGNORE`` (variables or version keys) are left out.

Exchange (one round trip, stdlib sockets, no torch import): the node with
NODE_RANK 0 listens on MASTER_ADDR's host at ``PRIMUS_CLUSTER_CHECK_PORT``
(default MASTER_PORT + 1: torchrun binds MASTER_PORT itself once the check is
over), every other node connects (retrying until ``PRIMUS_CLUSTER_CHECK_TIMEOUT``
seconds, default 300) and sends one JSON line; node 0 compares all reports and
sends the verdict back to every node. Any mismatch: every node prints each
variable with its values and the nodes holding them, and exits 2. Under
srun-native (one Slurm task per worker: RANK, LOCAL_RANK and WORLD_SIZE set)
the participants are the WORLD_SIZE workers and RANK 0 listens.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import time
from collections.abc import Mapping

from primus_runner.cluster.meanings import meanings
from primus_runner.facts import DISTRIBUTED_DEFAULTS, EXIT_INVALID, EXIT_RUNTIME

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs ~8 ms of every launch
    from typing import Any, TextIO

PROTOCOL = "primus-cluster-check/1"
MAX_REPORT = 4 << 20


# -- what a node reports ---------------------------------------------------------------
from primus_runner.hardware.versions import versions  # noqa: E402 (the node's versions, CPU vendor, torch)


def _secret(name: str) -> bool:
    from primus_runner.masking import mask

    return mask(name, "x") != "x"


def uniform_values(env: Mapping[str, str]) -> dict[str, str]:
    from primus_runner.env.registry import load

    reg = load()
    out: dict[str, str] = {}
    for name, value in env.items():
        if reg.scope_of(name) != "cluster-uniform":
            continue
        if _secret(name):
            value = "sha256:" + hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()
        out[name] = value
    return out


def participant(env: Mapping[str, str]) -> tuple[int, int]:
    """(this participant's id, how many take part)."""
    if env.get("RANK") and env.get("WORLD_SIZE") and env.get("LOCAL_RANK") is not None \
            and env.get("PRIMUS_SRUN_NATIVE") == "1":
        return int(env["RANK"]), int(env["WORLD_SIZE"])
    return int(env.get("NODE_RANK") or 0), int(env.get("NNODES") or 1)


def fingerprint(env: Mapping[str, str], root: str, node: int | None = None) -> dict[str, Any]:
    ident = participant(env)[0] if node is None else node
    meaning, why = meanings(env, root)
    return {"protocol": PROTOCOL, "node": ident, "host": os.uname().nodename,
            "uniform": uniform_values(env), "meaning": meaning,
            "raw": {name: env.get(name, "") for name in meaning}, "why": why,
            "versions": versions(root, env)}


# -- comparing ----------------------------------------------------------------------
def _ranges(ids: list[int]) -> str:
    """[0, 1, 2, 5] -> '0-2,5'."""
    out: list[str] = []
    for i in sorted(ids):
        if out and int(out[-1].split("-")[-1]) == i - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{i}"
        else:
            out.append(str(i))
    return ",".join(out)


def _sides(by_value: dict[str, list[tuple[int, str]]], word: str) -> str:
    parts = []
    for value, holders in by_value.items():
        ids = sorted(i for i, _ in holders)
        hosts = sorted({h for _, h in holders})
        shown = ", ".join(hosts[:3]) + (f" +{len(hosts) - 3}" if len(hosts) > 3 else "")
        label = word if len(ids) > 1 else word[:-1]
        parts.append(f"{value} on {label} {_ranges(ids)} ({shown})")
    return "; ".join(parts)


def _odd(by_value: dict[str, list[tuple[int, str]]], why: dict[int, list[str]], word: str) -> str:
    """' Odd node: 1 (h1: left out mlx5_1:1 state DOWN).': the nodes outside the one largest
    group of agreeing nodes, else (no majority) those that left out what the others did not;
    with what each left out that not every node did."""
    nodes = {i for holders in by_value.values() for i, _ in holders}
    common = set.intersection(*(set(why.get(i, [])) for i in nodes))
    extra = {i: [w for w in why.get(i, []) if w not in common] for i in nodes}
    groups = sorted(by_value.values(), key=len, reverse=True)
    if len(groups[0]) > len(groups[1]):
        odd = [holder for group in groups[1:] for holder in group]
    else:
        odd = [holder for group in groups for holder in group if extra[holder[0]]]
    if not odd:
        return ""
    shown = ", ".join(f"{i} ({h}" + (f": left out {'; '.join(extra[i])}" if extra[i] else "") + ")"
                      for i, h in sorted(odd)[:5])
    more = f" +{len(odd) - 5}" if len(odd) > 5 else ""
    return f" Odd {word[:-1] if len(odd) == 1 else word}: {shown}{more}."


def compare(reports: list[dict[str, Any]], ignore: set[str] | frozenset[str] = frozenset(),
            word: str = "nodes") -> list[str]:
    """Problems between the reports: one line per differing variable or version."""
    problems: list[str] = []
    seen: dict[int, str] = {}
    for r in reports:
        if r["node"] in seen:
            problems.append(f"{word[:-1]} {r['node']} is claimed by two launchers: {seen[r['node']]} "
                            f"and {r['host']}; each node needs its own NODE_RANK")
        seen[r["node"]] = r["host"]
    for key, label, what in (("uniform", "{name} differs between {word}", "the same value on every node"),
                             ("meaning", "{name} means different things on different {word}",
                              "values that mean the same on every node"),
                             ("versions", "{name} version differs between {word}",
                              "the same software on every node")):
        names = sorted({n for r in reports for n in r.get(key, {})} - set(ignore))
        for name in names:
            by_value: dict[str, list[tuple[int, str]]] = {}
            for r in reports:
                value = r.get(key, {}).get(name)
                if key == "uniform":
                    shown = "<unset>" if value is None else ("****" if str(value).startswith("sha256:")
                                                             and _secret(name) else repr(value))
                else:
                    shown = "<unknown>" if value is None else repr(value)
                by_value.setdefault(shown, []).append((r["node"], r["host"]))
            if len(by_value) > 1:
                line = label.format(name=name, word=word) + ": " + _sides(by_value, word)
                if key == "meaning":
                    values = "; ".join(f"{word[:-1]} {r['node']}: {r.get('raw', {}).get(name)!r}"
                                       for r in reports if r.get("raw", {}).get(name))
                    line += f" [values: {values}]" if values else ""
                    why = {r["node"]: list(r["why"][name]) for r in reports
                           if r.get("why", {}).get(name)}
                    line += "." + _odd(by_value, why, word)
                    problems.append(line + f" Needed: {what}")
                    continue
                problems.append(line + f". Needed: {what}")
    return problems


# -- the exchange -------------------------------------------------------------------------
def _endpoint(env: Mapping[str, str]) -> tuple[str, int]:
    host = env.get("MASTER_ADDR") or DISTRIBUTED_DEFAULTS["MASTER_ADDR"]
    explicit = env.get("PRIMUS_CLUSTER_CHECK_PORT")
    if explicit:
        return host, int(explicit)
    port = int(env.get("MASTER_PORT") or DISTRIBUTED_DEFAULTS["MASTER_PORT"])
    return host, port + 1 if port < 65535 else port - 1


def _send_line(conn: socket.socket, payload: dict[str, Any]) -> None:
    conn.sendall(json.dumps(payload).encode() + b"\n")


def _recv_line(conn: socket.socket, deadline: float) -> dict[str, Any] | None:
    data = b""
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0 or len(data) > MAX_REPORT:
            return None
        conn.settimeout(left)
        try:
            chunk = conn.recv(65536)
        except OSError:
            return None
        if not chunk:
            return None
        data += chunk
    try:
        value = json.loads(data.split(b"\n", 1)[0])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class CheckFailed(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def serve(mine: dict[str, Any], count: int, port: int, timeout: float) -> list[str]:
    """Node 0: collect ``count - 1`` reports, compare, answer each node."""
    deadline = time.monotonic() + timeout
    listener = socket.socket(socket.AF_INET6 if socket.has_ipv6 else socket.AF_INET)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        if listener.family == socket.AF_INET6:
            listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        listener.bind(("", port))
    except OSError as exc:
        listener.close()
        raise CheckFailed(EXIT_INVALID, f"cannot listen on port {port} for the cluster check "
                          f"({exc.strerror}). Fix: export PRIMUS_CLUSTER_CHECK_PORT=<a free port "
                          "on node 0, the same on every node>, or PRIMUS_CLUSTER_CHECK=0") from None
    listener.listen(min(count, 1024))
    peers: list[tuple[socket.socket, dict[str, Any]]] = []
    ids = {mine["node"]}
    try:
        while len(ids) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                missing = sorted(set(range(count)) - ids)
                raise CheckFailed(EXIT_RUNTIME, f"cluster check: {len(ids)} of {count} nodes reported "
                                  f"within {timeout:g} s; missing {_ranges(missing)}. Fix: start the "
                                  "launcher on every node (with the same MASTER_ADDR and MASTER_PORT), "
                                  "or raise PRIMUS_CLUSTER_CHECK_TIMEOUT")
            listener.settimeout(left)
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            report = _recv_line(conn, min(deadline, time.monotonic() + 30))
            if not report or report.get("protocol") != PROTOCOL or not isinstance(report.get("node"), int):
                conn.close()             # not one of ours: ignored
                continue
            peers.append((conn, report))
            ids.add(report["node"])
            if report["node"] == mine["node"] or sum(1 for _, r in peers if r["node"] == report["node"]) > 1:
                break                    # a duplicate rank: report it now instead of waiting
        problems = compare([mine, *(r for _, r in peers)], ignore=set())
        for conn, _ in peers:
            with contextlib.suppress(OSError):
                _send_line(conn, {"protocol": PROTOCOL, "problems": problems})
        return problems
    finally:
        for conn, _ in peers:
            conn.close()
        listener.close()


def join(mine: dict[str, Any], host: str, port: int, timeout: float) -> list[str]:
    """Any other node: report to node 0 and wait for its verdict."""
    deadline = time.monotonic() + timeout
    delay, last = 0.1, ""
    while True:
        try:
            conn = socket.create_connection((host, port), timeout=min(5.0, max(deadline - time.monotonic(), 0.1)))
        except OSError as exc:
            last = exc.strerror or str(exc)
            if time.monotonic() + delay > deadline:
                raise CheckFailed(EXIT_RUNTIME, f"cluster check: node 0 did not answer at "
                                  f"{host}:{port} within {timeout:g} s ({last}). Fix: start node 0, "
                                  "check that MASTER_ADDR is node 0's address and reachable from "
                                  "here, or raise PRIMUS_CLUSTER_CHECK_TIMEOUT") from None
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
            continue
        try:
            _send_line(conn, mine)
            verdict = _recv_line(conn, deadline)
        finally:
            conn.close()
        if verdict is None or not isinstance(verdict.get("problems"), list):
            raise CheckFailed(EXIT_RUNTIME, f"cluster check: no verdict from node 0 at {host}:{port} "
                              "(it stopped, or another launcher already holds that port)")
        return [str(p) for p in verdict["problems"]]


def wanted(env: Mapping[str, str]) -> bool:
    if env.get("PRIMUS_CLUSTER_CHECK", "1") == "0" or env.get("PRIMUS_DRY_RUN") == "1":
        return False
    return participant(env)[1] > 1


def _emit(env: Mapping[str, str], stream: TextIO, level: str, message: str) -> None:
    """One log line in runner/lib/common.sh's format (prefix from ``env``'s NODE_RANK)."""
    from primus_runner.masking import mask_text

    stamp = time.strftime("[%Y-%m-%dT%H:%M:%SZ] ", time.gmtime()) \
        if env.get("PRIMUS_LOG_TIMESTAMP", "1") == "1" else ""
    host = os.uname().nodename.split(".")[0]
    stream.write(f"{stamp}[NODE-{env.get('NODE_RANK', '0')}({host})] [{level}] {mask_text(message)}\n")
    stream.flush()


def run(env: Mapping[str, str], console: TextIO) -> int:
    """The whole check for one node; INFO goes to ``console``, errors to stderr."""
    import sys

    ident, count = participant(env)
    root = env.get("PRIMUS_SYSFS_ROOT") or "/"
    ignore = {n.strip() for n in (env.get("PRIMUS_CLUSTER_CHECK_IGNORE") or "").split(",") if n.strip()}
    mine = fingerprint(env, root, ident)
    for key in ("uniform", "meaning", "raw", "why", "versions"):
        mine[key] = {k: v for k, v in mine[key].items() if k not in ignore}
    host, port = _endpoint(env)
    timeout = float(env.get("PRIMUS_CLUSTER_CHECK_TIMEOUT") or 300)
    try:
        problems = serve(mine, count, port, timeout) if ident == 0 else join(mine, host, port, timeout)
    except CheckFailed as exc:
        _emit(env, sys.stderr, "ERROR", str(exc))
        return exc.code
    if problems:
        text = "\n".join(f"  - {p}" for p in problems)
        _emit(env, sys.stderr, "ERROR", f"cluster check FAILED ({len(problems)} problem(s)); nothing "
                    f"was started on any node:\n{text}\n  Fix: make these agree on every node (per-node "
                    "env files, hooks, container images), or leave a name out with "
                    "PRIMUS_CLUSTER_CHECK_IGNORE=NAME,...")
        return EXIT_INVALID  # the nodes disagree: a configuration error, like any other
    shown = ", ".join(f"{k} {v}" for k, v in mine["versions"].items()) or "no versions readable"
    _emit(env, console, "INFO", f"cluster check: {count} nodes agree on {len(mine['uniform'])} "
                f"cluster-uniform variables, the meaning of {len(mine['meaning'])} per-node "
                f"network values and the versions ({shown})")
    return 0
