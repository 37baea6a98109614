"""The closed loop's decision (launch/restart.py): a table of outcomes and what is decided."""
from __future__ import annotations

from pathlib import Path

import pytest

from primus_runner.facts import MONITOR_STOP_STOPPED_AFTER
from primus_runner.launch.restart import (
    Budget,
    Outcome,
    budget_from_env,
    decide,
    healthy_nodes,
    lost_text,
    observe_lines,
    parse_ranks,
)

STAMP = "[2026-12-07T20:00:00Z] "
HANG = (STAMP + "[NODE-1(node2)] [WARN] run monitor: hang: rank 3 (pid 4242) in stuck_here (hang_rank.py:20), "
        "not in the collective, while rank 2 (pid 4241) wait for it in all_reduce at main (hang_rank.py:30); "
        "no progress for 13 s")
WAITING = (STAMP + "[NODE-0(node1)] [WARN] run monitor: waiting: every local rank (0,1) waits in all_reduce at "
           "main (hang_rank.py:30) with no progress for 14 s: for a rank on another node")
HANG_STOP = (STAMP + "[NODE-1(node2)] [WARN] run monitor: PRIMUS_HANG_ACTION=stop: stopping the run on the hang "
             "verdict (SIGTERM to the launcher, pid 99); exit code 86.")
KILLED = (STAMP + "[NODE-0(vm)] [ERROR] failure report: global rank 1 (local rank 1 of node 0) failed first, "
          "exit code 137 (killed by SIGKILL).")
RAISED = (STAMP + "[NODE-0(vm)] [ERROR] failure report: global rank 0 (local rank 0 of node 0) failed first, "
          "exit code 1.")
EXCEPTION = STAMP + "[NODE-0(vm)] [ERROR]   exception: RuntimeError: boom in the user's code"
STOPPED = (STAMP + "[NODE-2(node3)] [WARN] run monitor: stopped: ranks 4,5 (pid 11, 12) stopped (state T: SIGSTOP, "
           f"SIGTSTP or a debugger) for {MONITOR_STOP_STOPPED_AFTER:.0f} s; the job cannot progress until it "
           "continues. Fix: kill -CONT 11 12")
MISMATCH = (STAMP + "[NODE-0(vm)] [WARN] run monitor: collective mismatch: the ranks wait in different collectives, "
            "which can never complete: rank 0 (pid 1) in all_reduce at a; rank 1 (pid 2) in barrier at b")
STRAGGLER = (STAMP + "[NODE-1(node2)] [WARN] run monitor: straggler: rank 2 is the one the others wait for: its "
             "score stayed at or above 0.5 for 3 rounds of 30 s")
OUTSIDE = (STAMP + "[NODE-0(vm)] [WARN] stop: SIGTERM, sent to this launcher alone; ranks 0, 1 still running at "
           "the stop; 3 process(es) stopped within the 10 s grace, none killed; exit status 143; log: /w/a.log.")
RESUMED = "[train] resumed from step 8: /w/cpu_pretrain/checkpoints/ckpt-step00000008.pt"
STEP = "[train] step 9/30 loss 2.7928"

RESTART = Budget(policy="restart", restart_max=3, node_limit=1)


def outcome(code: int, *lines: str) -> Outcome:
    return observe_lines(lines, Outcome(exit_code=code), now=100.0)


# (case, exit code, lines, budget, can leave out, restart?, reason, charged, left out after, words in why)
CASES = [
    ("hang verdict stopped: restart, node2 charged and left out", 86, [WAITING, HANG, HANG_STOP], RESTART, True,
     True, "hang", ("node2",), ("node2",), ["hang verdict", "suspect ranks 3"]),
    ("hang on one host: restart on the same host", 86, [HANG, HANG_STOP], RESTART, False,
     True, "hang", ("node2",), (), ["hang verdict"]),
    ("a rank SIGKILLed (or OOM-killed): restart", 137, [KILLED], RESTART, False,
     True, "signal", ("vm",), (), ["killed by signal 9", "out-of-memory"]),
    ("a stopped rank that stays stopped: restart", 86, [STOPPED, HANG_STOP.replace("hang verdict", "stopped verdict")],
     RESTART, True, True, "stopped", ("node3",), ("node3",), ["stopped verdict", "suspect ranks 4,5"]),
    ("an exception on every rank: never", 1, [RAISED, EXCEPTION], RESTART, True,
     False, "user_code", (), (), ["workload's own code", "exit code 1", "RuntimeError: boom", "fail again"]),
    ("a collective mismatch: never", 86, [MISMATCH, HANG_STOP.replace("hang verdict", "mismatch verdict")], RESTART,
     True, False, "mismatch", (), (), ["code's own"]),
    ("budget spent: ends naming it", 137, [KILLED], Budget(policy="restart", restart_max=2, restarts=2), False,
     False, "budget", ("vm",), (), ["PRIMUS_RESTART_MAX=2", "2 of"]),
    ("PRIMUS_ON_FAILURE=report: nothing restarts", 137, [KILLED], Budget(policy="report"), True,
     False, "policy", (), (), ["PRIMUS_ON_FAILURE=report"]),
    ("PRIMUS_ON_FAILURE=stop: nothing restarts", 86, [HANG, HANG_STOP], Budget(policy="stop"), True,
     False, "policy", (), (), ["PRIMUS_ON_FAILURE=stop"]),
    ("a straggler without the opt-in: report only", 143, [STRAGGLER], RESTART, True,
     False, "policy", (), (), ["PRIMUS_RESTART_ON_STRAGGLER=1"]),
    ("a straggler with the opt-in: restart, its node left out", 143, [STRAGGLER],
     Budget(policy="restart", on_straggler=True), True, True, "straggler", ("node2",), ("node2",), ["straggler"]),
    ("a stop from outside: never", 143, [OUTSIDE], RESTART, True,
     False, "outside_stop", (), (), ["from outside"]),
    ("a launch refused before the workload: never", 2, [], RESTART, True,
     False, "refused", (), (), ["before the workload ran"]),
    ("the requeue code: the workload's request, not a failure", 85, [], RESTART, True,
     False, "requeue", (), (), ["requeue"]),
    ("success", 0, [STEP], RESTART, True, False, "success", (), (), ["succeeded"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_decision_table(case: tuple) -> None:  # type: ignore[type-arg]
    _, code, lines, budget, can_leave_out, restart, reason, charged, left_out, words = case
    got = decide(outcome(code, *lines), budget, can_leave_out=can_leave_out)
    assert (got.restart, got.reason, got.charged, got.budget.left_out) == (restart, reason, charged, left_out)
    for word in words:
        assert word in got.why
    if restart:
        assert got.budget.restarts == budget.restarts + 1
    else:
        assert got.budget.restarts == budget.restarts


def test_a_node_is_left_out_only_after_its_limit() -> None:
    budget = Budget(policy="restart", restart_max=5, node_limit=2)
    first = decide(outcome(86, HANG, HANG_STOP), budget, can_leave_out=True)
    assert first.restart and first.budget.left_out == () and dict(first.budget.node_failures) == {"node2": 1}
    second = decide(outcome(86, HANG, HANG_STOP), first.budget, can_leave_out=True)
    assert second.restart and second.budget.left_out == ("node2",) and second.budget.restarts == 2


def test_no_healthy_nodes_left_is_a_requeue_excluding_the_left_out_ones() -> None:
    pool = ["node1", "node2", "node3"]
    got = decide(outcome(86, HANG, HANG_STOP), RESTART, can_leave_out=True, pool=pool, needed=3)
    assert not got.restart and got.requeue and got.budget.left_out == ("node2",)
    assert "2 healthy node(s) left of 3, 3 needed: requeue with node2 excluded" in got.why
    spare = decide(outcome(86, HANG, HANG_STOP), RESTART, can_leave_out=True, pool=[*pool, "node4"], needed=3)
    assert spare.restart and healthy_nodes([*pool, "node4"], spare.budget, 3) == ["node1", "node3", "node4"]


def test_a_cluster_check_failure_charges_its_node() -> None:
    got = decide(Outcome(exit_code=2, check_failed=("node4",)), RESTART, can_leave_out=True)
    assert got.restart and got.reason == "cluster_check" and got.budget.left_out == ("node4",)


def test_the_observed_run_names_the_resume_and_the_first_step() -> None:
    seen = observe_lines([RESUMED, STEP, OUTSIDE], Outcome(), now=7.0)
    assert (seen.resumed_step, seen.resumed_file) == (8, "/w/cpu_pretrain/checkpoints/ckpt-step00000008.pt")
    assert seen.first_step_at == 7.0 and seen.log_file == "/w/a.log"
    hang = observe_lines([HANG], Outcome(), now=50.0)
    assert hang.still_s == 13.0 and hang.verdict_at == 50.0 and hang.suspects == (3,)


def test_parse_ranks_and_the_budget_from_the_environment() -> None:
    assert parse_ranks("ranks 0,2-4 (pid 1) and rank 9") == (0, 2, 3, 4, 9)
    assert budget_from_env({}) == Budget()
    env = {"PRIMUS_ON_FAILURE": "restart", "PRIMUS_RESTART_MAX": "5", "PRIMUS_NODE_FAILURE_LIMIT": "2",
           "PRIMUS_RESTART_ON_STRAGGLER": "1"}
    assert budget_from_env(env) == Budget(policy="restart", restart_max=5, node_limit=2, on_straggler=True)


def test_lost_time_sums_the_marks() -> None:
    total, text = lost_text(100.0, 113.0, 118.0, 119.0, 130.0)
    assert total == 30.0
    assert text == "failure -> verdict +13.0 s -> stopped +5.0 s -> restarted +1.0 s -> first step done +11.0 s"


def test_across_nodes_the_rank_killed_by_a_signal_is_the_cause_not_the_peers_that_lost_it() -> None:
    peer = (STAMP + "[NODE-0(node1)] [ERROR] failure report: global rank 0 (local rank 0 of node 0) failed first, "
            "exit code 1.")
    peer_exc = STAMP + "[NODE-0(node1)] [ERROR]   exception: RuntimeError: Connection closed by peer"
    killed = (STAMP + "[NODE-2(node3)] [ERROR] failure report: global rank 4 (local rank 0 of node 2) failed "
              "first, exit code 137 (killed by SIGKILL).")
    got = decide(outcome(137, peer, peer_exc, killed), RESTART, can_leave_out=True)
    assert got.restart and got.reason == "signal" and got.charged == ("node3",)
    assert got.budget.left_out == ("node3",)


def test_the_step_command_runs_on_the_healthy_hosts_only() -> None:
    from primus_runner.launch.restart_loop import resume_args
    from primus_runner.launch.restart_slurm import doctor_excluded, step_command

    cmd = ["srun", '--nodes="$SLURM_JOB_NUM_NODES"', "--ntasks-per-node=2", "--kill-on-bad-exit=1", "entry.sh",
           "direct", "--", "train", "pretrain"]
    cmd[1] = "--nodes=4"
    assert step_command(cmd, ["node1", "node3", "node4"]) == [
        "srun", "--nodes=3", "--ntasks=6", "--nodelist=node1,node3,node4", "--ntasks-per-node=2",
        "--kill-on-bad-exit=1", "entry.sh", "direct", "--", "train", "pretrain"]
    assert doctor_excluded("NODE STATUS\nnode2 FAIL\n--exclude=node[2,4]\n") == ["node2", "node4"]
    assert doctor_excluded("fleet healthy\n") == []
    assert resume_args(["bash", "direct.sh", "--", "train", "pretrain", "--config", "x"]) == ["--resume", "auto"]
    assert resume_args(["bash", "direct.sh", "--", "train", "pretrain", "--resume", "off"]) == []
    assert resume_args(["bash", "direct.sh", "--script", "mine.py"]) == []


def test_spare_nodes_are_added_at_submission_for_sbatch_only() -> None:
    from primus_runner.launch.slurm_submit import plan

    records = plan(["-N", "3"], "sbatch", {}, "direct", "0", spares="1")
    assert ("added", "--nodes=4", "") in records and ("set", "PRIMUS_SPARE_NODES", "1", ) in records
    assert ("sim", "PRIMUS_SIM_NODES", "3") in records
    refused = plan(["-N", "3"], "srun", {}, "direct", "0", spares="1")[-1]
    assert refused[0] == "usage-error" and "--spare-nodes applies to 'primus-cli slurm sbatch' only" in refused[1]
    assert plan(["-N", "3"], "sbatch", {}, "direct", "0", spares="x")[-1][0] == "usage-error"
    assert plan(["-N", "2-4"], "sbatch", {}, "direct", "0", spares="1")[-1][0] == "usage-error"


def test_a_multi_node_launch_is_not_restarted_node_by_node() -> None:
    summary = STAMP + "[NODE-0(vm)] [INFO]   NNODES=2 NODE_RANK=0 GPUS_PER_NODE=2 MASTER_ADDR=node1 MASTER_PORT=1234"
    got = decide(outcome(137, summary, KILLED), RESTART)
    assert not got.restart and got.reason == "multi_node" and "primus-cli slurm sbatch" in got.why
    assert decide(outcome(137, summary.replace("NNODES=2", "NNODES=1"), KILLED), RESTART).restart


def test_a_restart_line_in_the_log_file_masks_a_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A failure's text quoted into the loop's line (the user's exception) may hold a secret's value.
    from primus_runner.launch.restart_loop import Loop

    monkeypatch.setenv("HF_TOKEN", "hf-sekrit-value-123")
    log_file = tmp_path / "primus-x-node0.log"
    Loop._log_line(str(log_file), "attempt 0 ended: RuntimeError: bad token hf-sekrit-value-123", "WARN")
    text = log_file.read_text()
    assert "hf-sekrit-value-123" not in text
    assert "bad token ****" in text
