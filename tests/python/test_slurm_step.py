"""primus_runner.scheduler.step: the Slurm step one node's entry runs in."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from primus_runner.scheduler import step

ROOT = Path(__file__).resolve().parents[2]
STEP = {"SLURM_JOB_ID": "42", "SLURM_STEP_ID": "0", "SLURM_STEP_NUM_NODES": "2",
        "SLURM_STEP_NODELIST": "n[1-2]", "SLURM_NODEID": "1", "SLURM_PROCID": "1",
        "SLURM_STEP_NUM_TASKS": "2", "SLURM_STEP_TASKS_PER_NODE": "1(x2)"}


def no_config(key: str) -> str:
    raise AssertionError(f"the configuration was read for {key}")


def config_of(values: dict[str, str]) -> step.ConfigGet:
    return lambda key: values.get(key, "")


def records(env: dict[str, str], mode: str = "direct", srun_native: str = "",
            config: step.ConfigGet = no_config) -> list[step.Record]:
    return step.plan(env, "/opt/entry.sh", mode, srun_native, config)


def sets(out: list[step.Record]) -> dict[str, str]:
    return {name: value for kind, name, value in out if kind == "set"}


def refusal(out: list[step.Record]) -> str:
    assert out[-1][0] == "refuse", out
    return out[-1][1]


def test_one_task_per_node_sets_the_shape_without_reading_the_configuration() -> None:
    out = records(STEP)
    assert sets(out) == {"PRIMUS_STEP_NODES": "2", "PRIMUS_STEP_NODELIST": "n[1-2]", "PRIMUS_STEP_NODE_ID": "1",
                         "PRIMUS_STEP_TASKS": "2", "PRIMUS_ENTRY_MODE": "direct"}
    assert [kind for kind, _, _ in out] == ["set"] * 5


def test_step_variables_beat_job_variables() -> None:
    env = dict(STEP, SLURM_NNODES="4", SLURM_JOB_NUM_NODES="4", SLURM_NODELIST="n[1-4]", SLURM_NODEID="0")
    assert sets(records(env))["PRIMUS_STEP_NODES"] == "2"
    assert sets(records(env))["PRIMUS_STEP_NODELIST"] == "n[1-2]"


def test_outside_a_job_names_the_variable_and_how_to_start() -> None:
    env = {k: v for k, v in STEP.items() if k != "SLURM_JOB_ID"}
    text = refusal(records(env))
    assert "not inside a Slurm job: SLURM_JOB_ID is unset" in text
    assert "srun --ntasks-per-node=1 /opt/entry.sh direct" in text


@pytest.mark.parametrize("nodes", ["0", "many", ""])
def test_a_node_count_that_is_not_positive_is_refused(nodes: str) -> None:
    env = dict(STEP, SLURM_STEP_NUM_NODES=nodes)
    env.pop("SLURM_NNODES", None)
    assert f"the number of nodes of this Slurm step is '{nodes}'" in refusal(records(env))


def test_a_node_index_beyond_the_step_is_refused_with_the_range() -> None:
    text = refusal(records(dict(STEP, SLURM_NODEID="2")))
    assert "this node's index is '2'" in text and "accepted: 0..1" in text


def test_without_nodeid_the_node_is_the_one_holding_task_procid() -> None:
    env = dict(STEP, SLURM_STEP_NUM_TASKS="4", SLURM_STEP_TASKS_PER_NODE="2(x2)", SLURM_PROCID="3")
    del env["SLURM_NODEID"]
    out = records(env, srun_native="1", config=no_config)
    assert sets(out)["PRIMUS_STEP_NODE_ID"] == "1"


def test_a_malformed_tasks_per_node_is_refused_naming_it() -> None:
    text = refusal(records(dict(STEP, SLURM_STEP_TASKS_PER_NODE="2(y2)")))
    assert "SLURM_STEP_TASKS_PER_NODE='2(y2)'" in text


def test_an_empty_node_list_is_refused() -> None:
    env = dict(STEP, SLURM_STEP_NODELIST="")
    assert "the node list of this Slurm step is empty" in refusal(records(env))


def test_the_batch_script_of_a_multi_node_job_is_refused_with_the_srun_call() -> None:
    env = {"SLURM_JOB_ID": "9", "SLURM_JOB_NUM_NODES": "4", "SLURM_NNODES": "4", "SLURM_NODELIST": "n[1-4]",
           "SLURM_NODEID": "0"}
    text = refusal(records(env, mode="container"))
    assert "running in the batch script of a 4-node job (SLURM_JOB_ID=9, no SLURM_STEP_ID)" in text
    assert text.endswith("srun --ntasks-per-node=1 /opt/entry.sh container ...")


def test_the_batch_script_of_a_one_node_job_runs() -> None:
    env = {"SLURM_JOB_ID": "9", "SLURM_JOB_NUM_NODES": "1", "SLURM_NODELIST": "n1", "SLURM_NODEID": "0"}
    assert records(env)[-1][0] == "set"


def test_the_mode_comes_from_the_configuration_only_when_none_is_named() -> None:
    assert sets(records(STEP, mode="", config=config_of({"slurm.mode": "direct"})))["PRIMUS_ENTRY_MODE"] == "direct"
    assert sets(records(STEP, mode="", config=config_of({})))["PRIMUS_ENTRY_MODE"] == "container"
    text = refusal(records(STEP, mode="", config=config_of({"slurm.mode": "bare"})))
    assert text == ("config slurm.mode='bare' is not a mode; accepted: direct, container. Fix slurm.mode "
                    "or name the mode on the command line.")


def test_several_tasks_per_node_are_refused_on_task_0_with_the_fix() -> None:
    env = dict(STEP, SLURM_STEP_NUM_NODES="4", SLURM_STEP_NODELIST="n[1-4]", SLURM_NODEID="0", SLURM_PROCID="0",
               SLURM_STEP_NUM_TASKS="8", SLURM_STEP_TASKS_PER_NODE="2(x4)")
    text = refusal(records(env, srun_native="0"))
    assert "this step runs 8 tasks on 4 node(s) (SLURM_STEP_TASKS_PER_NODE=2(x4))" in text
    assert "srun --ntasks-per-node=1" in text and "--srun-native" in text
    other = refusal(records(dict(env, SLURM_PROCID="3"), srun_native="0"))
    assert other == "refused: 8 tasks on 4 node(s); see task 0's message (--ntasks-per-node=1, or --srun-native)."


def test_srun_native_exports_the_worker_ids_and_asks_for_single() -> None:
    env = dict(STEP, SLURM_STEP_NUM_TASKS="4", SLURM_STEP_TASKS_PER_NODE="2(x2)", SLURM_PROCID="3",
               SLURM_LOCALID="1")
    out = records(env, srun_native="1")
    exports = {name: value for kind, name, value in out if kind == "export"}
    assert exports == {"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2",
                       "PRIMUS_SRUN_NATIVE": "1"}
    assert ("single", "", "") in out
    assert ("info", "srun-native: worker RANK=3 LOCAL_RANK=1 WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 (no torchrun)",
            "") in out


def test_srun_native_in_container_mode_is_refused() -> None:
    env = dict(STEP, SLURM_STEP_NUM_TASKS="4", SLURM_STEP_TASKS_PER_NODE="2(x2)", SLURM_LOCALID="0")
    assert "mode 'container' is not supported with it" in refusal(records(env, mode="container", srun_native="1"))


def test_srun_native_without_localid_is_refused() -> None:
    env = dict(STEP, SLURM_STEP_NUM_TASKS="4", SLURM_STEP_TASKS_PER_NODE="2(x2)")
    assert "srun-native needs SLURM_LOCALID (seen '')" in refusal(records(env, srun_native="1"))


@pytest.mark.parametrize(("flag", "word", "config", "wanted"), [
    ("1", "no", "0", True), ("0", "yes", "true", False),
    ("", "yes", "0", True), ("", "false", "true", False),
    ("", "", "true", True), ("", "", "1", True), ("", "", "", False), ("", "maybe", "0", False)])
def test_srun_native_flag_beats_the_variable_which_beats_the_configuration(
        flag: str, word: str, config: str, wanted: bool) -> None:
    env = {"PRIMUS_SLURM_SRUN_NATIVE": word} if word else {}
    assert step.srun_native_wanted(flag, env, config_of({"slurm.srun_native": config})) is wanted


def test_the_command_writes_nul_records_and_reads_a_config_file(tmp_path: Path) -> None:
    cfg = tmp_path / "exp.yaml"
    cfg.write_text("slurm:\n  mode: direct\n")
    env = dict(os.environ, **STEP, PYTHONPATH=str(ROOT / "python"), HOME=str(tmp_path))
    done = subprocess.run([sys.executable, "-m", "primus_runner", "slurm-step", "--entry", "e.sh",
                           "--config", str(cfg)], env=env, capture_output=True, check=True)
    fields = done.stdout.split(b"\0")
    assert fields[-1] == b""
    assert b"PRIMUS_ENTRY_MODE\0direct" in done.stdout


def test_the_command_refuses_a_bad_flag_value() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    done = subprocess.run([sys.executable, "-m", "primus_runner", "slurm-step", "--srun-native", "yes"],
                          env=env, capture_output=True, text=True)
    assert done.returncode == 2
    assert "--srun-native 'yes' is not 0 or 1" in done.stderr
