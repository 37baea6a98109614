"""What `primus-cli slurm` adds to the user's srun/sbatch flags, and node 0's
simulated step for --dry-run (launch/slurm_submit.py, asked once per call by
runner/primus-cli-slurm.sh; tests/bats/slurm_cli.bats runs the command)."""
from __future__ import annotations

import pytest

from primus_runner.launch.slurm_submit import given_flags, plan


def added(records: list[tuple[str, str, str]]) -> list[str]:
    return [r[1] for r in records if r[0] == "added"]


def of(records: list[tuple[str, str, str]], kind: str) -> dict[str, str]:
    return {r[1]: r[2] for r in records if r[0] == kind}


@pytest.mark.parametrize(("flags", "given"), [
    (["-N", "4"], {"NODES": "4"}), (["-N4"], {"NODES": "4"}), (["--nodes", "4"], {"NODES": "4"}),
    (["--nodes=2-4"], {"NODES": "2-4"}), (["-t", "1:00"], {"TIME": "1:00"}), (["--time=5"], {"TIME": "5"}),
    (["-pgpu"], {"PARTITION": "gpu"}), (["--gpus-per-node=8"], {"GPUS": "8"}),
    (["--ntasks-per-node", "2"], {"TPN": "2"}), (["--ntasks-per-node=2"], {"TPN": "2"}),
    (["-n8"], {"NTASKS": "8"}), (["--ntasks=8"], {"NTASKS": "8"}), (["-w", "n[1-2]"], {"NODELIST": "n[1-2]"}),
    (["-K"], {"KILL": "1"}), (["--kill-on-bad-exit=0"], {"KILL": "0"}), (["-K0"], {"KILL": "0"}),
    (["--signal", "USR1@60"], {"SIGNAL": "USR1@60"}), (["--requeue", "--no-requeue"], {"REQUEUE": "0"}),
    (["-N"], {"NODES": ""}),                       # a flag at the end takes an empty value
    (["-N", "2", "-N", "3"], {"NODES": "3"}),       # the last one wins
    (["--exclusive", "-o", "x.out"], {}),           # anything else passes through unread
])
def test_every_spelling(flags: list[str], given: dict[str, str]) -> None:
    assert given_flags(flags)[0] == given


@pytest.mark.parametrize(("launcher", "flags", "config", "expected"), [
    ("srun", [], {}, ["--ntasks-per-node=1", "--kill-on-bad-exit=1"]),
    ("sbatch", [], {}, ["--ntasks-per-node=1"]),
    ("srun", ["-n", "4", "-K0"], {}, []),
    ("srun", ["--ntasks-per-node=2"], {}, ["--kill-on-bad-exit=1"]),
    ("srun", [], {"slurm.nodes": "2", "slurm.time": "1:00", "slurm.partition": "p", "slurm.gpus_per_node": "8",
                  "slurm.signal": "USR1@90"},
     ["--nodes=2", "--time=1:00", "--partition=p", "--gpus-per-node=8", "--signal=USR1@90",
      "--ntasks-per-node=1", "--kill-on-bad-exit=1"]),
    ("srun", ["-N3", "-t5", "-pq", "--gpus-per-node", "4", "--signal=USR2"],
     {"slurm.nodes": "2", "slurm.time": "1:00", "slurm.partition": "p", "slurm.gpus_per_node": "8",
      "slurm.signal": "USR1@90"}, ["--ntasks-per-node=1", "--kill-on-bad-exit=1"]),
    ("sbatch", [], {"slurm.requeue": "1"}, ["--requeue", "--ntasks-per-node=1"]),
    ("sbatch", ["--no-requeue"], {"slurm.requeue": "true"}, ["--ntasks-per-node=1"]),
])
def test_added_flags(launcher: str, flags: list[str], config: dict[str, str], expected: list[str]) -> None:
    assert added(plan(flags, launcher, config)) == expected


@pytest.mark.parametrize(("launcher", "flags", "config", "requeue", "warned"), [
    ("sbatch", [], {}, "0", False),
    ("sbatch", ["--requeue"], {}, "1", False),
    ("sbatch", [], {"slurm.requeue": "1"}, "1", False),
    ("sbatch", ["--no-requeue"], {"slurm.requeue": "1"}, "0", False),
    ("sbatch", ["--requeue", "--no-requeue"], {"slurm.requeue": "1"}, "1", False),
    ("srun", [], {"slurm.requeue": "1"}, "0", True),
])
def test_requeue(launcher: str, flags: list[str], config: dict[str, str], requeue: str, warned: bool) -> None:
    out = plan(flags, launcher, config)
    assert of(out, "set")["PRIMUS_REQUEUE"] == requeue
    assert any(r[0] == "warn" for r in out) == warned


@pytest.mark.parametrize(("mode", "native", "config", "want_mode", "want_native"), [
    ("", "", {}, "container", "0"),
    ("direct", "", {"slurm.mode": "container"}, "direct", "0"),
    ("", "", {"slurm.mode": "direct", "slurm.srun_native": "1"}, "direct", "1"),
    ("", "1", {"slurm.srun_native": "0"}, "container", "1"),
    ("", "", {"slurm.srun_native": "true"}, "container", "1"),
])
def test_mode_and_srun_native(mode: str, native: str, config: dict[str, str], want_mode: str,
                              want_native: str) -> None:
    sets = of(plan([], "srun", config, mode, native), "set")
    assert (sets["PRIMUS_SLURM_MODE"], sets["PRIMUS_OPT_SRUN_NATIVE"]) == (want_mode, want_native)


@pytest.mark.parametrize(("flags", "config", "words"), [
    (["-N", "x"], {}, "-N/--nodes value 'x'"),
    (["--ntasks-per-node=0"], {}, "--ntasks-per-node value '0'"),
    (["-n", "-1"], {}, "-n/--ntasks value '-1'"),
    ([], {"slurm.nodes": "many"}, "config slurm.nodes='many'"),
    ([], {"slurm.mode": "k8s"}, "config slurm.mode='k8s'"),
])
def test_refusals(flags: list[str], config: dict[str, str], words: str) -> None:
    out = plan(flags, "srun", config)
    assert out[-1][0] == "usage-error" and words in out[-1][1]


def test_a_warning_comes_before_the_refusal_it_precedes() -> None:
    assert [r[0] for r in plan([], "srun", {"slurm.requeue": "1", "slurm.mode": "x"})] == ["warn", "usage-error"]


@pytest.mark.parametrize(("launcher", "flags", "inner"), [
    ("sbatch", [], ["--ntasks-per-node=1", "--kill-on-bad-exit=1"]),
    ("sbatch", ["--ntasks-per-node=4", "-K"], ["--ntasks-per-node=4"]),
    ("sbatch", ["-n", "8"], ["--kill-on-bad-exit=1"]),
])
def test_batch_script_srun_flags(launcher: str, flags: list[str], inner: list[str]) -> None:
    assert [r[1] for r in plan(flags, launcher, {}) if r[0] == "inner"] == inner


@pytest.mark.parametrize(("flags", "config", "sim"), [
    ([], {}, ("1", "dryrun-node1", "1", "1", "1")),
    (["-N", "4"], {}, ("4", "dryrun-node[1-4]", "1", "4", "1")),
    (["-N", "2-4"], {}, ("2", "dryrun-node[1-2]", "1", "2", "1")),
    (["-N", "0"], {}, ("1", "dryrun-node1", "1", "1", "1")),
    ([], {"slurm.nodes": "3"}, ("3", "dryrun-node[1-3]", "1", "3", "1")),
    (["-w", "n[1-3]"], {}, ("3", "n[1-3]", "1", "3", "0")),
    (["-w", "n[1-3]", "-N", "2"], {}, ("2", "n[1-3]", "1", "2", "0")),
    (["-w", "./hosts"], {}, ("1", "dryrun-node1", "1", "1", "1")),   # a file: placeholders
    (["-N", "2", "-n", "5"], {}, ("2", "dryrun-node[1-2]", "3", "5", "1")),
    (["-N", "2", "--ntasks-per-node=4"], {}, ("2", "dryrun-node[1-2]", "4", "8", "1")),
])
def test_simulated_step(flags: list[str], config: dict[str, str], sim: tuple[str, ...]) -> None:
    got = of(plan(flags, "srun", config), "sim")
    assert tuple(got[f"PRIMUS_SIM_{k}"] for k in ("NODES", "NODELIST", "TPN", "TASKS", "PLACEHOLDER")) == sim


def test_an_invalid_nodelist_is_said_only_for_the_dry_run() -> None:
    out = plan(["-w", "n[3-1]"], "srun", {})
    assert out[-1][0] == "sim-error" and "-w/--nodelist 'n[3-1]'" in out[-1][2]
    assert "--kill-on-bad-exit=1" in added(out)
