"""Rank mapping for every scheduler shape (docs/configuration.md "Detection and rank mapping");
expected values by hand."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from primus_runner.cluster.ranks import RankMap, resolve
from primus_runner.errors import UsageError
from primus_runner.scheduler.variables import parse_tasks_per_node

ROOT = Path(__file__).resolve().parents[2]

SLURM4 = {"SLURM_JOB_ID": "77", "SLURM_NNODES": "4", "SLURM_JOB_NUM_NODES": "4",
          "SLURM_NODELIST": "gpu[017-020]", "SLURM_JOB_NODELIST": "gpu[017-020]"}

# (label, env, defaults, expected as_env, source, tasks_per_node)
TABLE = [
    ("nothing set: single host with the reference defaults",
     {}, None,
     {"MASTER_ADDR": "localhost", "MASTER_PORT": "1234", "NNODES": "1", "NODE_RANK": "0",
      "GPUS_PER_NODE": "8"}, "single", 1),
    ("explicit exports, leading zeros are decimal",
     {"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "029500", "NNODES": "08", "NODE_RANK": "07",
      "GPUS_PER_NODE": "08"}, None,
     {"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500", "NNODES": "8", "NODE_RANK": "7",
      "GPUS_PER_NODE": "8"}, "explicit", 1),
    ("config defaults fill what the environment lacks; exports win over config",
     {"MASTER_PORT": "4000"},
     {"MASTER_ADDR": "head", "MASTER_PORT": "5000", "NNODES": "2", "NODE_RANK": "1",
      "GPUS_PER_NODE": "4"},
     {"MASTER_ADDR": "head", "MASTER_PORT": "4000", "NNODES": "2", "NODE_RANK": "1",
      "GPUS_PER_NODE": "4"}, "explicit", 1),
    ("slurm: one task per node, node 2 of 4",
     {**SLURM4, "SLURM_NODEID": "2", "SLURM_PROCID": "2", "SLURM_TASKS_PER_NODE": "1(x4)"}, None,
     {"MASTER_ADDR": "gpu017", "MASTER_PORT": "12464", "NNODES": "4", "NODE_RANK": "2",
      "GPUS_PER_NODE": "8"}, "slurm", 1),
    ("slurm: 8 tasks per node, SLURM_NODEID (not SLURM_PROCID) is the node rank",
     {**SLURM4, "SLURM_NODEID": "1", "SLURM_PROCID": "13", "SLURM_TASKS_PER_NODE": "8(x4)"}, None,
     {"MASTER_ADDR": "gpu017", "MASTER_PORT": "12464", "NNODES": "4", "NODE_RANK": "1",
      "GPUS_PER_NODE": "8"}, "slurm", 8),
    ("slurm: no SLURM_NODEID, node from SLURM_PROCID and uneven tasks 2,2,1",
     {"SLURM_JOB_ID": "5", "SLURM_NNODES": "3", "SLURM_NODELIST": "a[1-3]", "SLURM_PROCID": "4",
      "SLURM_TASKS_PER_NODE": "2(x2),1"}, None,
     {"MASTER_ADDR": "a1", "MASTER_PORT": "10160", "NNODES": "3", "NODE_RANK": "2",
      "GPUS_PER_NODE": "8"}, "slurm", 1),
    ("slurm: the step's node list and count win over the job's",
     {**SLURM4, "SLURM_STEP_NUM_NODES": "2", "SLURM_STEP_NODELIST": "gpu[019-020]",
      "SLURM_NODEID": "1", "SLURM_STEP_TASKS_PER_NODE": "1(x2)"}, None,
     {"MASTER_ADDR": "gpu019", "MASTER_PORT": "12464", "NNODES": "2", "NODE_RANK": "1",
      "GPUS_PER_NODE": "8"}, "slurm", 1),
    ("slurm: several bracket groups, first host in Slurm's order",
     {"SLURM_JOB_ID": "9", "SLURM_JOB_NUM_NODES": "6", "SLURM_JOB_NODELIST": "r[2-3]n[07-09]",
      "SLURM_NODEID": "5"}, None,
     {"MASTER_ADDR": "r2n07", "MASTER_PORT": "10288", "NNODES": "6", "NODE_RANK": "5",
      "GPUS_PER_NODE": "8"}, "slurm", 1),
    ("slurm: the shell's scontrol answer is used as is",
     {**SLURM4, "SLURM_NODEID": "0", "PRIMUS_SLURM_FIRST_HOST": "gpu017"}, None,
     {"MASTER_ADDR": "gpu017", "MASTER_PORT": "12464", "NNODES": "4", "NODE_RANK": "0",
      "GPUS_PER_NODE": "8"}, "slurm", 1),
    ("slurm: user FQDN of the first node is accepted and kept",
     {**SLURM4, "SLURM_NODEID": "3", "MASTER_ADDR": "gpu017.cluster.local",
      "MASTER_PORT": "29500", "NNODES": "4", "NODE_RANK": "3"}, None,
     {"MASTER_ADDR": "gpu017.cluster.local", "MASTER_PORT": "29500", "NNODES": "4",
      "NODE_RANK": "3", "GPUS_PER_NODE": "8"}, "slurm", 1),
    ("slurm: short user name against an FQDN node list",
     {"SLURM_JOB_ID": "1", "SLURM_NNODES": "2", "SLURM_NODELIST": "gpu[1-2].dc1",
      "SLURM_NODEID": "1", "MASTER_ADDR": "gpu1"}, None,
     {"MASTER_ADDR": "gpu1", "MASTER_PORT": "10032", "NNODES": "2", "NODE_RANK": "1",
      "GPUS_PER_NODE": "8"}, "slurm", 1),
    ("slurm: single-node allocation outside a step is rank 0",
     {"SLURM_JOB_ID": "3", "SLURM_NNODES": "1", "SLURM_NODELIST": "solo"}, None,
     {"MASTER_ADDR": "solo", "MASTER_PORT": "10096", "NNODES": "1", "NODE_RANK": "0",
      "GPUS_PER_NODE": "8"}, "slurm", 1),
    ("openmpi: 4 nodes x 8 ranks, world rank 13 is on node 1",
     {"OMPI_COMM_WORLD_RANK": "13", "OMPI_COMM_WORLD_SIZE": "32",
      "OMPI_COMM_WORLD_LOCAL_SIZE": "8", "OMPI_COMM_WORLD_LOCAL_RANK": "5",
      "MASTER_ADDR": "head0"}, None,
     {"MASTER_ADDR": "head0", "MASTER_PORT": "1234", "NNODES": "4", "NODE_RANK": "1",
      "GPUS_PER_NODE": "8"}, "openmpi", 8),
    ("openmpi: one launcher per node",
     {"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "3",
      "OMPI_COMM_WORLD_LOCAL_SIZE": "1", "MASTER_ADDR": "10.1.0.5"}, None,
     {"MASTER_ADDR": "10.1.0.5", "MASTER_PORT": "1234", "NNODES": "3", "NODE_RANK": "2",
      "GPUS_PER_NODE": "8"}, "openmpi", 1),
    ("pmix: PMIX_RANK with a local size",
     {"PMIX_RANK": "9", "PMIX_SIZE": "16", "PMIX_LOCAL_SIZE": "4", "MASTER_ADDR": "m0"}, None,
     {"MASTER_ADDR": "m0", "MASTER_PORT": "1234", "NNODES": "4", "NODE_RANK": "2",
      "GPUS_PER_NODE": "8"}, "pmix", 4),
    ("pytorchjob: PET_* variables",
     {"PET_NNODES": "3", "PET_NODE_RANK": "2", "PET_MASTER_ADDR": "job-master-0",
      "PET_MASTER_PORT": "23456", "PET_NPROC_PER_NODE": "4",
      "MASTER_ADDR": "job-master-0", "MASTER_PORT": "23456"}, None,
     {"MASTER_ADDR": "job-master-0", "MASTER_PORT": "23456", "NNODES": "3", "NODE_RANK": "2",
      "GPUS_PER_NODE": "4"}, "pytorchjob", 1),
    ("pytorchjob: fixed elastic range 2:2 and nproc 'auto' ignored",
     {"PET_NNODES": "2:2", "PET_NODE_RANK": "0", "PET_MASTER_ADDR": "pj-0",
      "PET_NPROC_PER_NODE": "auto"}, None,
     {"MASTER_ADDR": "pj-0", "MASTER_PORT": "1234", "NNODES": "2", "NODE_RANK": "0",
      "GPUS_PER_NODE": "8"}, "pytorchjob", 1),
    ("pytorchjob: elastic range with an exported NNODES inside it",
     {"PET_NNODES": "1:4", "PET_NODE_RANK": "1", "PET_MASTER_ADDR": "pj-0", "NNODES": "3"}, None,
     {"MASTER_ADDR": "pj-0", "MASTER_PORT": "1234", "NNODES": "3", "NODE_RANK": "1",
      "GPUS_PER_NODE": "8"}, "pytorchjob", 1),
    ("jobset: JOB_COMPLETION_INDEX is the node rank",
     {"JOB_COMPLETION_INDEX": "3", "NNODES": "4", "MASTER_ADDR": "js-workers-0-0.js"}, None,
     {"MASTER_ADDR": "js-workers-0-0.js", "MASTER_PORT": "1234", "NNODES": "4",
      "NODE_RANK": "3", "GPUS_PER_NODE": "8"}, "jobset", 1),
    ("jobset: node count from config",
     {"JOB_COMPLETION_INDEX": "1", "MASTER_ADDR": "js-0"}, {"NNODES": "2"},
     {"MASTER_ADDR": "js-0", "MASTER_PORT": "1234", "NNODES": "2", "NODE_RANK": "1",
      "GPUS_PER_NODE": "8"}, "jobset", 1),
]


@pytest.mark.parametrize("label, env, defaults, expected, source, tasks", TABLE,
                         ids=[row[0] for row in TABLE])
def test_rank_mapping_table(label, env, defaults, expected, source, tasks) -> None:
    result = resolve(env, defaults)
    assert isinstance(result, RankMap)
    assert result.as_env() == expected
    assert result.source == source
    assert result.tasks_per_node == tasks


# (label, env, defaults, fragments every error message must contain)
CONTRADICTIONS = [
    ("exported NODE_RANK against SLURM_NODEID",
     {**SLURM4, "SLURM_NODEID": "2", "NODE_RANK": "0"}, None,
     ["NODE_RANK=0", "SLURM_NODEID=2"]),
    ("exported NNODES against SLURM_NNODES",
     {**SLURM4, "SLURM_NODEID": "2", "NNODES": "8"}, None, ["NNODES=8", "SLURM_NNODES=4"]),
    ("MASTER_ADDR of another host than the first node",
     {**SLURM4, "SLURM_NODEID": "1", "MASTER_ADDR": "gpu018"}, None,
     ["MASTER_ADDR=gpu018", "gpu017"]),
    ("MASTER_ADDR sharing only a prefix with the first node",
     {**SLURM4, "SLURM_NODEID": "1", "MASTER_ADDR": "gpu0170.cluster"}, None,
     ["MASTER_ADDR=gpu0170.cluster", "gpu017"]),
    ("slurm node count and node list disagree",
     {"SLURM_JOB_ID": "1", "SLURM_NNODES": "3", "SLURM_NODELIST": "n[1-2]", "SLURM_NODEID": "0"},
     None, ["SLURM_NNODES=3", "n[1-2]", "2"]),
    ("multi-node allocation without a step",
     {"SLURM_JOB_ID": "42", "SLURM_NNODES": "2", "SLURM_NODELIST": "n[1-2]"}, None,
     ["SLURM_NODEID", "srun"]),
    ("malformed SLURM_TASKS_PER_NODE",
     {**SLURM4, "SLURM_PROCID": "1", "SLURM_TASKS_PER_NODE": "2(x)"}, None,
     ["SLURM_TASKS_PER_NODE='2(x)'"]),
    ("malformed node list",
     {"SLURM_JOB_ID": "1", "SLURM_NODELIST": "n[1-", "SLURM_NODEID": "0"}, None, ["'[1-'"]),
    ("openmpi world size not a multiple of the local size",
     {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "10",
      "OMPI_COMM_WORLD_LOCAL_SIZE": "4", "MASTER_ADDR": "h"}, None,
     ["OMPI_COMM_WORLD_SIZE=10", "OMPI_COMM_WORLD_LOCAL_SIZE=4"]),
    ("openmpi against an exported NODE_RANK",
     {"OMPI_COMM_WORLD_RANK": "8", "OMPI_COMM_WORLD_SIZE": "16",
      "OMPI_COMM_WORLD_LOCAL_SIZE": "8", "NODE_RANK": "0", "MASTER_ADDR": "h"}, None,
     ["NODE_RANK=0", "=1"]),
    ("pytorchjob against an exported MASTER_PORT",
     {"PET_NNODES": "2", "PET_NODE_RANK": "0", "PET_MASTER_ADDR": "m", "PET_MASTER_PORT": "23456",
      "MASTER_PORT": "29500"}, None, ["MASTER_PORT=29500", "PET_MASTER_PORT=23456"]),
    ("pytorchjob elastic range without NNODES",
     {"PET_NNODES": "1:4", "PET_NODE_RANK": "0", "PET_MASTER_ADDR": "m"}, None,
     ["PET_NNODES='1:4'", "NNODES"]),
    ("jobset index beyond NNODES",
     {"JOB_COMPLETION_INDEX": "4", "NNODES": "4", "MASTER_ADDR": "js-0"}, None,
     ["NODE_RANK='4'", "NNODES=4", "0..3"]),
    ("multi-node with localhost",
     {"NNODES": "2", "NODE_RANK": "1"}, None, ["MASTER_ADDR='localhost'", "NNODES=2"]),
    ("multi-node with 127.0.0.1 from config",
     {}, {"NNODES": "2", "MASTER_ADDR": "127.0.0.1"}, ["MASTER_ADDR='127.0.0.1'", "config"]),
    ("NODE_RANK not below NNODES", {"NNODES": "2", "NODE_RANK": "2", "MASTER_ADDR": "h"}, None,
     ["NODE_RANK='2'", "NNODES=2", "0..1"]),
    ("MASTER_PORT below 1024", {"MASTER_PORT": "80"}, None, ["MASTER_PORT='80'", "1024-65535"]),
    ("MASTER_PORT above 65535", {"MASTER_PORT": "65536"}, None, ["MASTER_PORT='65536'", "1024-65535"]),
    ("MASTER_PORT not a number", {"MASTER_PORT": "12a"}, None, ["MASTER_PORT='12a'", "1024-65535"]),
    ("NNODES zero", {"NNODES": "0"}, None, ["NNODES='0'", ">= 1"]),
    ("negative NODE_RANK", {"NODE_RANK": "-1"}, None, ["NODE_RANK='-1'"]),
    ("GPUS_PER_NODE zero", {"GPUS_PER_NODE": "0"}, None, ["GPUS_PER_NODE='0'", ">= 1"]),
    ("GPUS_PER_NODE hex", {"GPUS_PER_NODE": "0x8"}, None, ["GPUS_PER_NODE='0x8'"]),
    ("MASTER_ADDR with shell syntax", {"MASTER_ADDR": "$(reboot)"}, None,
     ["MASTER_ADDR='$(reboot)'", "host name"]),
    ("MASTER_ADDR with a space", {"MASTER_ADDR": "a b"}, None, ["MASTER_ADDR='a b'"]),
]


@pytest.mark.parametrize("label, env, defaults, fragments", CONTRADICTIONS,
                         ids=[row[0] for row in CONTRADICTIONS])
def test_contradictions_and_bad_values_name_both_values(label, env, defaults, fragments) -> None:
    with pytest.raises(UsageError) as info:
        resolve(env, defaults)
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))


def test_consistent_user_values_are_accepted_with_the_scheduler() -> None:
    env = {**SLURM4, "SLURM_NODEID": "3", "NODE_RANK": "03", "NNODES": "4"}
    assert resolve(env).as_env()["NODE_RANK"] == "3"


def test_ip_master_addr_under_slurm_is_kept_with_a_note() -> None:
    result = resolve({**SLURM4, "SLURM_NODEID": "1", "MASTER_ADDR": "10.0.0.17"})
    assert result.master_addr == "10.0.0.17"
    assert any("10.0.0.17" in note and "gpu017" in note for note in result.notes)


def test_resolve_is_pure_and_does_not_touch_its_input() -> None:
    env = {**SLURM4, "SLURM_NODEID": "1"}
    snapshot = dict(env)
    assert resolve(env) == resolve(env)
    assert env == snapshot


def test_neuron_root_comm_id() -> None:
    # The one derivation: MASTER_PORT+1 (never the rendezvous port), IPv6 bracketed.
    assert resolve({"MASTER_ADDR": "h0", "MASTER_PORT": "62182"}).neuron_root_comm_id() == "h0:62183"
    assert resolve({"MASTER_ADDR": "fd00::1"}).neuron_root_comm_id() == "[fd00::1]:1235"
    assert resolve({"MASTER_ADDR": "h0", "MASTER_PORT": "65535"}).neuron_root_comm_id() == "h0:65534"
    assert resolve({"MASTER_ADDR": "h0"}).neuron_root_comm_id(46820) == "h0:46820"


def test_tasks_per_node_format() -> None:
    assert parse_tasks_per_node("X", "2(x3),1") == [(2, 3), (1, 1)]
    assert parse_tasks_per_node("X", "8") == [(8, 1)]
    for bad in ("", "2(x0)", "a", "2(3)", "0"):
        with pytest.raises(UsageError):
            parse_tasks_per_node("X", bad)


def test_sixteen_thousand_node_slurm_list_maps_without_expanding() -> None:
    env = {"SLURM_JOB_ID": "1", "SLURM_NNODES": "16384",
           "SLURM_NODELIST": "n[00000-16383]", "SLURM_NODEID": "16383"}
    result = resolve(env)
    assert (result.master_addr, result.node_rank, result.nnodes) == ("n00000", 16383, 16384)


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("SLURM_", "OMPI_", "PMIX_", "PET_")) and k not in (
                "MASTER_ADDR", "MASTER_PORT", "NNODES", "NODE_RANK", "GPUS_PER_NODE",
                "JOB_COMPLETION_INDEX")}
    base.update(env, PYTHONPATH=str(ROOT / "python"))
    return subprocess.run([sys.executable, "-m", "primus_runner", "ranks", *args],
                          capture_output=True, env=base)


def test_cli_formats() -> None:
    env = {**SLURM4, "SLURM_NODEID": "2"}
    shell = _cli(env, "--format", "shell")
    assert shell.returncode == 0
    assert shell.stdout.decode() == ("export MASTER_ADDR=gpu017\nexport MASTER_PORT=12464\n"
                                     "export NNODES=4\nexport NODE_RANK=2\nexport GPUS_PER_NODE=8\n")
    data = json.loads(_cli(env, "--format", "json").stdout)
    assert data["source"] == "slurm" and data["node_rank"] == 2 and data["nodelist"] == "gpu[017-020]"
    nul = _cli(env, "--format", "nul", "--default", "MASTER_PORT=4242").stdout
    assert nul == (b"MASTER_ADDR\0gpu017\0MASTER_PORT\x004242\0NNODES\x004\0NODE_RANK\x002\0"
                   b"GPUS_PER_NODE\x008\0")
    bad = _cli({**env, "NODE_RANK": "0"})
    assert bad.returncode == 2
    assert b"NODE_RANK=0" in bad.stderr and b"SLURM_NODEID=2" in bad.stderr


# -- rendezvous semantics ------------------------------------------------------
def test_exported_pet_rdzv_is_refused_with_the_fix() -> None:
    env = {"MASTER_ADDR": "10.0.0.1", "NNODES": "2", "NODE_RANK": "0", "PET_RDZV_BACKEND": "c10d",
           "PET_RDZV_ENDPOINT": "10.0.0.1:29400"}
    with pytest.raises(UsageError) as err:
        resolve(env)
    text = str(err.value)
    assert text.startswith("PET_RDZV_BACKEND='c10d': is exported (also PET_RDZV_ENDPOINT)")
    assert getattr(err.value, "rule", "") == "pet_rdzv_exported"
    assert "Fix: unset PET_RDZV_BACKEND PET_RDZV_ENDPOINT" in text and "PRIMUS_ELASTIC=1" in text


def test_primus_elastic_honours_pet_rdzv_with_a_note() -> None:
    env = {"MASTER_ADDR": "10.0.0.1", "NNODES": "2", "NODE_RANK": "0", "PET_RDZV_BACKEND": "c10d",
           "PRIMUS_ELASTIC": "1"}
    mapping = resolve(env)
    assert any(n.startswith("PRIMUS_ELASTIC=1: torchrun uses the exported elastic rendezvous") for n in mapping.notes)


def test_two_slurm_steps_get_different_ports_the_same_on_every_node() -> None:
    step = {**SLURM4, "SLURM_JOB_ID": "4242", "SLURM_STEP_NUM_NODES": "4",
            "SLURM_STEP_NODELIST": "gpu[017-020]"}
    ports = {(s, n): resolve({**step, "SLURM_STEP_ID": str(s), "SLURM_NODEID": str(n)}).master_port
             for s in (0, 1) for n in (0, 3)}
    # 10000 + 2 * ((16 * 4242 + step) mod 11384): 67872 mod 11384 = 10952
    assert ports == {(0, 0): 31904, (0, 3): 31904, (1, 0): 31906, (1, 3): 31906}
    mapping = resolve({**step, "SLURM_STEP_ID": "1", "SLURM_NODEID": "0"})
    assert mapping.origins["MASTER_PORT"] == "derived from SLURM_JOB_ID=4242 and SLURM_STEP_ID=1"
    # a user's port (exported or from --config) is kept
    assert resolve({**step, "SLURM_NODEID": "0", "MASTER_PORT": "29500"}).master_port == 29500
    assert resolve({**step, "SLURM_NODEID": "0"}, {"MASTER_PORT": "4000"}).master_port == 4000


def test_pod_index_rank_and_world_size_map_as_pytorchjob_v1() -> None:
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "MASTER_ADDR": "job-master-0", "MASTER_PORT": "23456",
           "WORLD_SIZE": "3", "RANK": "2"}
    mapping = resolve(env)
    assert (mapping.source, mapping.nnodes, mapping.node_rank, mapping.master_port) == (
        "pytorchjob-v1", 3, 2, 23456)
    assert mapping.origins["NNODES"] == "WORLD_SIZE (PyTorchJob v1: pods)"


def test_bare_rank_and_world_size_outside_a_scheduler_are_refused() -> None:
    with pytest.raises(UsageError, match="RANK='1': is exported with WORLD_SIZE=2 but NNODES and NODE_RANK"):
        resolve({"MASTER_ADDR": "head", "WORLD_SIZE": "2", "RANK": "1"})


def test_master_addr_must_resolve_on_nonzero_ranks(tmp_path: Path) -> None:
    from primus_runner.cluster.ranks import check_master_resolves

    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/hosts").write_text("127.0.0.1 localhost\n10.0.0.1 node0\n")
    ok = resolve({"MASTER_ADDR": "node0", "NNODES": "2", "NODE_RANK": "1"})
    check_master_resolves(ok, str(tmp_path))
    bad = resolve({"MASTER_ADDR": "node-zero", "NNODES": "2", "NODE_RANK": "1"})
    with pytest.raises(UsageError, match="MASTER_ADDR='node-zero': does not resolve on this node"):
        check_master_resolves(bad, str(tmp_path))
    check_master_resolves(resolve({"MASTER_ADDR": "node-zero", "NNODES": "2", "NODE_RANK": "0"}),
                          str(tmp_path))                       # rank 0 is not refused
