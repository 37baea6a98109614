"""rendezvous.py: the node-0 pre-checks against this host's real sockets."""
from __future__ import annotations

import os
import socket

import pytest

from primus_runner.cluster import rendezvous
from primus_runner.errors import UsageError


@pytest.fixture()
def listener():
    sock = socket.socket()
    sock.bind(("", 0))
    sock.listen(1)
    yield sock.getsockname()[1]
    sock.close()


def env(**values: str) -> dict[str, str]:
    return {"NNODES": "1", "NODE_RANK": "0", "MASTER_ADDR": "localhost", "RUN_MODE": "torchrun", **values}


def test_free_port_is_bindable():
    port = rendezvous.free_port()
    assert 1024 <= port <= 65535
    assert rendezvous.check(env(MASTER_PORT=str(port))) == []


def test_busy_port_names_this_process(listener):
    assert (rendezvous.port_holder(listener) or "").startswith(f"pid {os.getpid()} (")
    errors = rendezvous.check(env(MASTER_PORT=str(listener)))
    assert len(errors) == 1
    assert f"MASTER_PORT={listener} cannot be bound" in errors[0]
    assert f"held by pid {os.getpid()}" in errors[0]
    assert "Fix:" in errors[0]


def test_other_nodes_and_single_mode_on_one_node_are_not_checked(listener):
    assert rendezvous.check(env(NNODES="2", NODE_RANK="1", MASTER_PORT=str(listener))) == []
    assert rendezvous.check(env(RUN_MODE="single", MASTER_PORT=str(listener))) == []
    assert rendezvous.check(env(RUN_MODE="single", NNODES="2", MASTER_PORT=str(listener)))


def test_master_addr_must_resolve_and_be_local():
    port = str(rendezvous.free_port())
    unknown = rendezvous.check(env(MASTER_ADDR="no-such-host.invalid", MASTER_PORT=port))
    assert "does not resolve on node 0" in unknown[0]
    assert "none of them an address of this host" in rendezvous.check(env(MASTER_ADDR="192.0.2.1", MASTER_PORT=port))[0]
    assert rendezvous.check(env(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)) == []
    assert rendezvous.check(env(MASTER_ADDR=socket.gethostname(), MASTER_PORT=port)) == []


def test_auto_port():
    assert rendezvous.auto_port({"MASTER_PORT": "29500"}) is None
    picked = rendezvous.auto_port({"MASTER_PORT": "auto", "X": "1"})
    assert picked is not None and picked["MASTER_PORT"].isdigit() and picked["X"] == "1"
    rendezvous.check_auto_single_node(1)
    with pytest.raises(UsageError, match="NNODES=2"):
        rendezvous.check_auto_single_node(2)


def test_port_holder_unknown_port():
    assert rendezvous.port_holder(rendezvous.free_port()) is None


def _range(tmp_path, text: str) -> str:
    base = tmp_path / "proc/sys/net/ipv4"
    base.mkdir(parents=True, exist_ok=True)
    (base / "ip_local_port_range").write_text(text)
    return str(tmp_path)


def test_free_port_avoids_the_ephemeral_range(tmp_path):
    root = _range(tmp_path, "21000\t65000\n")
    ports = {rendezvous.free_port(root) for _ in range(40)}
    assert all(rendezvous.PICK_LOW <= p < 21000 or 65000 < p <= 65535 for p in ports)
    assert len(ports) > 1  # chosen at random: launches at the same moment differ
    # A fixture tree without the file: Linux's default range is avoided.
    assert not 32768 <= rendezvous.free_port(str(tmp_path / "none")) <= 60999
    # Nothing left outside the range: the kernel's pick, still a bindable port.
    full = _range(tmp_path / "full", "1024 65535\n")
    assert rendezvous.check(env(MASTER_PORT=str(rendezvous.free_port(full)))) == []


def test_auto_port_avoids_the_ephemeral_range(tmp_path):
    root = _range(tmp_path, "20000 65000\n")
    picked = rendezvous.auto_port({"MASTER_PORT": "auto"}, root)
    assert picked is not None and int(picked["MASTER_PORT"]) > 65000


@pytest.mark.parametrize("values, wanted", [
    ({}, True),                                                      # nobody chose: picked
    ({"NNODES": "1", "NODE_RANK": "0"}, True),                       # one node, said out loud
    ({"MASTER_PORT": "29500"}, False),                               # the user's port
    ({"NNODES": "2", "MASTER_ADDR": "10.0.0.1"}, False),             # multi-node: 1234 everywhere
    ({"SLURM_JOB_ID": "7", "SLURM_NNODES": "1", "SLURM_NODELIST": "n1",
      "SLURM_NODEID": "0", "SLURM_PROCID": "0"}, False),             # a scheduler's port
])
def test_wants_free_port(values, wanted):
    from primus_runner.cluster import ranks

    assert rendezvous.wants_free_port(ranks.resolve(values)) is wanted
    assert rendezvous.wants_free_port(ranks.resolve({}, {"MASTER_PORT": "29533"})) is False  # user config
