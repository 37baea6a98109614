"""Clock offset from node 0, measured over UDP in a job (the doctor's ``clock offset`` row).

Node 0 answers every datagram with its wall clock for a few seconds; every other
node sends a few requests and keeps the answer with the shortest round trip
(offset = node 0's time - the midpoint of the request). Stdlib only; nothing is
measured outside a multi-node job. Must not need any other daemon (no NTP query).
"""
from __future__ import annotations

import socket
import struct
import time

SAMPLES = 5
SERVE_SECONDS = 8.0
ASK_SECONDS = 6.0


def serve(port: int, seconds: float = SERVE_SECONDS) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("", port))
    deadline = time.monotonic() + seconds
    try:
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            try:
                data, peer = sock.recvfrom(64)
            except OSError:
                continue
            sock.sendto(data[:8] + struct.pack("!d", time.time()), peer)
    finally:
        sock.close()


def ask(host: str, port: int, seconds: float = ASK_SECONDS) -> float:
    """node 0's clock minus ours, in seconds (raises OSError when it never answers)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    best: tuple[float, float] | None = None
    deadline = time.monotonic() + seconds
    got = 0
    try:
        address = socket.gethostbyname(host)
        while got < SAMPLES and time.monotonic() < deadline:
            sent = time.time()
            sock.sendto(struct.pack("!d", sent), (address, port))
            sock.settimeout(0.3)
            try:
                data = sock.recv(64)
            except OSError:
                continue
            back = time.time()
            if len(data) != 16 or struct.unpack("!d", data[:8])[0] != sent:
                continue
            got += 1
            offset = struct.unpack("!d", data[8:])[0] - (sent + back) / 2
            if best is None or back - sent < best[0]:
                best = (back - sent, offset)
    finally:
        sock.close()
    if best is None:
        raise OSError(f"no answer on UDP port {port} within {seconds:g} s")
    return best[1]


def measure_offset(master: str, port: int, rank: int, nnodes: int) -> float | None:
    """None on node 0 (which serves the others for a few seconds), else the offset."""
    if rank == 0:
        serve(port)
        return None
    return ask(master, port)
