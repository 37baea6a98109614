"""Data preparation once for all nodes (Primus docs, environment variables, section 8): path resolution,
and the marker protocol with real processes sharing a directory as two "nodes"."""
from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from primus_runner import dataprep
from primus_runner.errors import MissingError, RuntimeFailure, UsageError

ROOT = Path(__file__).resolve().parents[2]
CORPUS_TEXT = "Ab c.\n\nDe\n\n\nF\n"
# Byte ids of each paragraph followed by the end-of-document id 256, by hand.
EXPECTED = [65, 98, 32, 99, 46, 256, 68, 101, 256, 70, 256]


def independent_tokens(prefix: str) -> list[int]:
    """All tokens of a .bin/.idx pair, read with struct from the MMIDIDX format."""
    raw = Path(prefix + ".idx").read_bytes()
    assert raw[:9] == b"MMIDIDX\x00\x00"
    assert struct.unpack_from("<Q", raw, 9)[0] == 1
    code = raw[17]
    seqs, docs = struct.unpack_from("<QQ", raw, 18)
    lengths = struct.unpack_from(f"<{seqs}i", raw, 34)
    pointers = struct.unpack_from(f"<{seqs}q", raw, 34 + 4 * seqs)
    doc_idx = struct.unpack_from(f"<{docs}q", raw, 34 + 12 * seqs)
    assert doc_idx[0] == 0 and doc_idx[-1] == seqs
    fmt = {8: "H", 4: "i"}[code]
    data = Path(prefix + ".bin").read_bytes()
    out: list[int] = []
    for n, p in zip(lengths, pointers, strict=True):
        out.extend(struct.unpack_from(f"<{n}{fmt}", data, p))
    return out


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.txt"
    path.write_text(CORPUS_TEXT)
    return path


def base_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TOKENIZED_", "PRIMUS_", "SLURM_", "TORCHELASTIC_"))
           and k not in ("NODE_RANK", "LOCAL_RANK")}
    env["PYTHONPATH"] = str(ROOT / "python")
    env["PRIMUS_LOG_COLOR"] = "0"
    env.update(extra)
    return env


def start(args: list[str], env: dict[str, str], out: Path) -> subprocess.Popen:
    stream = open(out, "wb")  # noqa: SIM115 (the caller closes it after the process ends)
    proc = subprocess.Popen([sys.executable, "-m", "primus_runner", "data", *args], env=env,
                            stdout=stream, stderr=subprocess.STDOUT)
    stream.close()
    return proc


def wait_for_text(path: Path, text: str, seconds: float = 60) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never appeared in {path}: {path.read_text(errors='replace')!r}")


def prefix_for(workspace: Path) -> str:
    return str(workspace / "data" / "tiny" / "byte" / "tiny_text_document")


# ---------------------------------------------------------------- resolution


def test_default_prefix_is_under_the_workspace(tmp_path: Path) -> None:
    plan = dataprep.resolve_plan({}, {}, str(tmp_path))
    assert plan.train_prefix == str(tmp_path / "data" / "corpus" / "byte" / "corpus_text_document")
    assert plan.eval_prefix is None
    assert plan.corpus == str(dataprep.BUNDLED_CORPUS)
    assert plan.timeout == 3600.0
    assert plan.done_marker == plan.train_prefix + ".done"


def test_tokenized_data_path_env_beats_config(tmp_path: Path) -> None:
    cfg = {"tokenized_data_path": "/cfg/prefix"}
    assert dataprep.resolve_plan(cfg, {}, str(tmp_path)).train_prefix == "/cfg/prefix"
    plan = dataprep.resolve_plan(cfg, {"TOKENIZED_DATA_PATH": "/env/prefix"}, str(tmp_path))
    assert plan.train_prefix == "/env/prefix"


def test_train_and_eval_paths_with_a_held_out_split(tmp_path: Path) -> None:
    cfg = {"eval_fraction": 0.2}
    plan = dataprep.resolve_plan(cfg, {}, "/ws")
    assert (plan.train_prefix, plan.eval_prefix) == ("/ws/data/corpus/byte/corpus_text_document_train",
                                                     "/ws/data/corpus/byte/corpus_text_document_eval")
    plan = dataprep.resolve_plan(cfg, {"TOKENIZED_DATA_PATH": "/s/all"}, "/ws")
    assert (plan.train_prefix, plan.eval_prefix) == ("/s/all", "/s/all_eval")
    env = {"TOKENIZED_DATA_PATH": "/s/all", "TOKENIZED_TRAIN_DATA_PATH": "/s/train",
           "TOKENIZED_EVAL_DATA_PATH": "/s/valid"}
    plan = dataprep.resolve_plan(cfg, env, "/ws")
    assert (plan.train_prefix, plan.eval_prefix) == ("/s/train", "/s/valid")


def test_train_path_without_a_split_is_ignored_with_a_note() -> None:
    plan = dataprep.resolve_plan({}, {"TOKENIZED_TRAIN_DATA_PATH": "/s/train"}, "/ws")
    assert plan.train_prefix == "/ws/data/corpus/byte/corpus_text_document"
    assert any("TOKENIZED_TRAIN_DATA_PATH" in note and "ignored" in note for note in plan.notes)


def test_primus_tokenized_data_path_is_existing_data_not_an_output() -> None:
    plan = dataprep.resolve_plan({}, {"PRIMUS_TOKENIZED_DATA_PATH": "/s/ready"}, "/ws")
    assert plan.existing and plan.train_prefix == "/s/ready"
    plan = dataprep.resolve_plan({"train_data_path": None}, {"PRIMUS_TOKENIZED_DATA_PATH": "/s/ready"}, "/ws")
    assert not plan.existing
    assert plan.train_prefix == "/ws/data/corpus/byte/corpus_text_document"


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan"])
def test_bad_timeout_is_a_usage_error_naming_the_variable(value: str) -> None:
    with pytest.raises(UsageError, match=f"PRIMUS_DATA_PREP_TIMEOUT_SECONDS='{value}' is not a positive number"):
        dataprep.resolve_plan({}, {"PRIMUS_DATA_PREP_TIMEOUT_SECONDS": value}, "/ws")


def test_timeout_env_beats_config() -> None:
    plan = dataprep.resolve_plan({"timeout_seconds": 10}, {"PRIMUS_DATA_PREP_TIMEOUT_SECONDS": "2"}, "/ws")
    assert plan.timeout == 2.0
    assert dataprep.resolve_plan({"timeout_seconds": 10}, {}, "/ws").timeout == 10.0


def test_unknown_key_and_bad_fraction_are_usage_errors() -> None:
    with pytest.raises(UsageError,
                       match=r"unknown data config key 'eval_fracton' \(did you mean 'eval_fraction'\?\)"):
        dataprep.resolve_plan({"eval_fracton": 0.1}, {}, "/ws")
    with pytest.raises(UsageError, match=r"'eval_fraction: 1\.5' is not a fraction"):
        dataprep.resolve_plan({"eval_fraction": 1.5}, {}, "/ws")


def test_failure_marker_staleness() -> None:
    marker = {"key": "k", "run_id": "slurm:1.0", "created": 1000.0}
    assert dataprep.failure_is_current(marker, "k", "slurm:1.0", started=5000.0)
    assert not dataprep.failure_is_current(marker, "k", "slurm:2.0", started=1000.0)
    assert not dataprep.failure_is_current(marker, "other", "slurm:1.0", started=1000.0)
    no_id = {"key": "k", "run_id": None, "created": 1000.0}
    assert dataprep.failure_is_current(no_id, "k", None, started=1059.0)
    assert not dataprep.failure_is_current(no_id, "k", None, started=1061.0)
    assert dataprep.run_id({"SLURM_JOB_ID": "7", "SLURM_STEP_ID": "2"}) == "slurm:7.2"
    assert dataprep.run_id({"TORCHELASTIC_RUN_ID": "none"}) is None


# ---------------------------------------------------------------- two nodes, one directory


def test_rank1_waits_then_proceeds(tmp_path: Path, corpus: Path) -> None:
    ws = tmp_path / "ws"
    args = ["prepare", "--corpus", str(corpus), "--workspace", str(ws)]
    rank1 = start(args, base_env(NODE_RANK="1"), tmp_path / "r1.log")
    wait_for_text(tmp_path / "r1.log", "waiting for node rank 0")
    assert rank1.poll() is None
    rank0 = start(args, base_env(NODE_RANK="0", PRIMUS_DATA_PREP_FAULT="sleep:0.5"), tmp_path / "r0.log")
    assert rank0.wait(30) == 0, (tmp_path / "r0.log").read_text()
    assert rank1.wait(30) == 0, (tmp_path / "r1.log").read_text()
    assert "train_tokens=11" in (tmp_path / "r1.log").read_text()
    assert "preparing the tokenized data" in (tmp_path / "r0.log").read_text()
    assert independent_tokens(prefix_for(ws)) == EXPECTED
    marker = json.loads(Path(prefix_for(ws) + ".done").read_text())
    assert marker["vocab_size"] == 257 and marker["tokens"] == {"train": 11}


def test_injected_failure_stops_rank1_within_5s_naming_the_reason(tmp_path: Path, corpus: Path) -> None:
    ws = tmp_path / "ws"
    args = ["prepare", "--corpus", str(corpus), "--workspace", str(ws)]
    rank1 = start(args, base_env(NODE_RANK="1"), tmp_path / "r1.log")
    wait_for_text(tmp_path / "r1.log", "waiting for node rank 0")
    rank0 = start(args, base_env(NODE_RANK="0", PRIMUS_DATA_PREP_FAULT="fail:disk on fire"), tmp_path / "r0.log")
    assert rank0.wait(60) == 3
    failed_at = time.monotonic()  # the failure marker is written before rank 0 exits
    code = rank1.wait(30)
    assert time.monotonic() - failed_at < 5
    assert code != 0
    text = (tmp_path / "r1.log").read_text()
    assert "failed to prepare the tokenized data" in text and "disk on fire" in text
    prefix = prefix_for(ws)
    assert not os.path.exists(prefix + ".bin") and not os.path.exists(prefix + ".done")
    assert [p.name for p in Path(prefix).parent.iterdir()] == ["tiny_text_document.failed"]


def test_sigkill_mid_preparation_then_rerun_redoes_it(tmp_path: Path, corpus: Path) -> None:
    ws = tmp_path / "ws"
    prefix = prefix_for(ws)
    args = ["prepare", "--corpus", str(corpus), "--workspace", str(ws)]
    rank0 = start(args, base_env(NODE_RANK="0", PRIMUS_DATA_PREP_FAULT="sleep:60"), tmp_path / "r0.log")
    partial = Path(f"{prefix}.tmp-{socket.gethostname()}-{rank0.pid}.bin")
    end = time.monotonic() + 60
    while not (partial.exists() and partial.stat().st_size > 0) and time.monotonic() < end:
        time.sleep(0.05)
    assert partial.stat().st_size == 12  # the first document, 6 tokens of 2 bytes
    rank0.send_signal(signal.SIGKILL)
    assert rank0.wait(10) == -signal.SIGKILL
    assert not os.path.exists(prefix + ".done") and not os.path.exists(prefix + ".bin")

    # A waiting rank never takes the partial output: it times out.
    waiter = subprocess.run([sys.executable, "-m", "primus_runner", "data", "wait", "--corpus", str(corpus),
                             "--workspace", str(ws)], env=base_env(PRIMUS_DATA_PREP_TIMEOUT_SECONDS="1"),
                            capture_output=True, text=True, timeout=30)
    assert waiter.returncode == 3 and "timed out after 1 s" in waiter.stderr

    rerun = subprocess.run([sys.executable, "-m", "primus_runner", "data", *args], env=base_env(NODE_RANK="0"),
                           capture_output=True, text=True, timeout=30)
    assert rerun.returncode == 0, rerun.stderr
    assert f"removed partial output of an interrupted run: {partial}" in rerun.stderr
    assert not partial.exists()
    assert independent_tokens(prefix) == EXPECTED
    assert sorted(p.name for p in Path(prefix).parent.iterdir()) == [
        "tiny_text_document.bin", "tiny_text_document.done", "tiny_text_document.idx"]


def test_final_files_without_a_completion_marker_are_not_used(tmp_path: Path, corpus: Path) -> None:
    ws = tmp_path / "ws"
    prefix = prefix_for(ws)
    Path(prefix).parent.mkdir(parents=True)
    Path(prefix + ".bin").write_bytes(b"\x01\x00")
    Path(prefix + ".idx").write_bytes(b"garbage")
    rerun = subprocess.run([sys.executable, "-m", "primus_runner", "data", "prepare", "--corpus", str(corpus),
                            "--workspace", str(ws)], env=base_env(), capture_output=True, text=True, timeout=30)
    assert rerun.returncode == 0, rerun.stderr
    assert "not reusing the files" in rerun.stderr
    assert independent_tokens(prefix) == EXPECTED


def test_timeout_gives_a_clear_error(tmp_path: Path, corpus: Path) -> None:
    began = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "primus_runner", "data", "prepare", "--corpus", str(corpus),
                           "--workspace", str(tmp_path / "ws")],
                          env=base_env(NODE_RANK="1", PRIMUS_DATA_PREP_TIMEOUT_SECONDS="2"),
                          capture_output=True, text=True, timeout=30)
    elapsed = time.monotonic() - began
    assert proc.returncode == 3
    assert 2 <= elapsed < 10
    assert "timed out after 2 s (PRIMUS_DATA_PREP_TIMEOUT_SECONDS) waiting for node rank 0" in proc.stderr
    assert "storage shared by all nodes" in proc.stderr


def test_rerun_reuses_complete_data_and_a_changed_corpus_is_redone(tmp_path: Path, corpus: Path) -> None:
    ws = tmp_path / "ws"
    prefix = prefix_for(ws)
    cmd = [sys.executable, "-m", "primus_runner", "data", "prepare", "--corpus", str(corpus), "--workspace", str(ws)]
    assert subprocess.run(cmd, env=base_env(), capture_output=True, timeout=30).returncode == 0
    before = os.stat(prefix + ".bin").st_mtime_ns
    again = subprocess.run(cmd, env=base_env(), capture_output=True, text=True, timeout=30)
    assert again.returncode == 0 and "reusing the tokenized data" in again.stderr
    assert os.stat(prefix + ".bin").st_mtime_ns == before
    corpus.write_text("Z\n")
    changed = subprocess.run(cmd, env=base_env(), capture_output=True, text=True, timeout=30)
    assert changed.returncode == 0
    assert "completion marker from a different corpus" in changed.stderr
    assert independent_tokens(prefix) == [90, 256]


def test_failure_marker_of_another_run_is_ignored(tmp_path: Path, corpus: Path) -> None:
    ws = tmp_path / "ws"
    plan = dataprep.resolve_plan({"corpus": str(corpus)}, {}, str(ws))
    key = dataprep.plan_key(plan, dataprep.corpus_digest(str(corpus)))
    Path(plan.train_prefix).parent.mkdir(parents=True)
    dataprep.write_marker(plan.failed_marker, {"key": key, "run_id": "slurm:1.0", "created": time.time(),
                                               "reason": "old failure"})
    cmd = [sys.executable, "-m", "primus_runner", "data", "wait", "--corpus", str(corpus), "--workspace", str(ws)]
    other = subprocess.run(cmd, env=base_env(SLURM_JOB_ID="2", SLURM_STEP_ID="0",
                                             PRIMUS_DATA_PREP_TIMEOUT_SECONDS="1"),
                           capture_output=True, text=True, timeout=30)
    assert other.returncode == 3 and "timed out" in other.stderr and "old failure" not in other.stderr
    same = subprocess.run(cmd, env=base_env(SLURM_JOB_ID="1", SLURM_STEP_ID="0"),
                          capture_output=True, text=True, timeout=30)
    assert same.returncode == 3 and "old failure" in same.stderr


def test_held_out_split(tmp_path: Path, corpus: Path) -> None:
    plan = dataprep.resolve_plan({"corpus": str(corpus), "eval_fraction": 0.5}, {}, str(tmp_path))
    dataprep.ensure_prepared(plan, node_rank=0, local_rank=0, env={}, say=lambda _: None)
    # 3 documents, ceil(3 * 0.5) = 2 held out: the last two.
    assert independent_tokens(plan.train_prefix) == [65, 98, 32, 99, 46, 256]
    assert plan.eval_prefix is not None
    assert independent_tokens(plan.eval_prefix) == [68, 101, 256, 70, 256]


def test_training_tokens_api_local_rank_waits_for_local_rank_0(tmp_path: Path, corpus: Path) -> None:
    cfg = {"corpus": str(corpus), "timeout_seconds": 20}
    results: dict[str, object] = {}

    def waiter() -> None:
        try:
            results["waiter"] = dataprep.training_tokens(cfg, workspace=str(tmp_path), node_rank=0, local_rank=1,
                                                         env={})
        except Exception as exc:  # noqa: BLE001 (reported below)
            results["waiter"] = exc

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(0.3)
    assert thread.is_alive()
    tokens, vocab = dataprep.training_tokens(cfg, workspace=str(tmp_path), node_rank=0, local_rank=0, env={})
    thread.join(30)
    assert list(tokens) == EXPECTED and vocab == 257
    waited = results["waiter"]
    assert isinstance(waited, tuple) and list(waited[0]) == EXPECTED and waited[1] == 257


def test_workload_entry_point(tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from primus_runner.dataprep.training_data import training_tokens

    for name in ("TOKENIZED_DATA_PATH", "PRIMUS_TOKENIZED_DATA_PATH", "PRIMUS_DATA_PREP_FAULT",
                 "PRIMUS_DATA_PREP_TIMEOUT_SECONDS"):
        monkeypatch.delenv(name, raising=False)
    tokens, vocab = training_tokens({"corpus": str(corpus)}, workspace=str(tmp_path), node_rank=0, local_rank=0)
    assert list(tokens) == EXPECTED and vocab == 257


def test_existing_data_is_used_as_is_and_a_missing_prefix_is_exit_1(tmp_path: Path, corpus: Path) -> None:
    plan = dataprep.resolve_plan({"corpus": str(corpus)}, {}, str(tmp_path))
    dataprep.ensure_prepared(plan, node_rank=0, local_rank=0, env={}, say=lambda _: None)
    tokens, vocab = dataprep.training_tokens({}, workspace=str(tmp_path / "other"), node_rank=3, local_rank=0,
                                             env={"PRIMUS_TOKENIZED_DATA_PATH": plan.train_prefix})
    assert list(tokens) == EXPECTED and vocab == 257
    assert not (tmp_path / "other").exists()
    with pytest.raises(MissingError, match="does not exist") as info:
        dataprep.training_tokens({"train_data_path": str(tmp_path / "nope")}, workspace=str(tmp_path),
                                 node_rank=0, local_rank=0, env={})
    assert info.value.exit_code == 1


def test_status_command_exit_codes(tmp_path: Path, corpus: Path) -> None:
    ws = str(tmp_path / "ws")
    cmd = [sys.executable, "-m", "primus_runner", "data", "status", "--corpus", str(corpus), "--workspace", ws]
    absent = subprocess.run(cmd, env=base_env(), capture_output=True, text=True, timeout=30)
    assert absent.returncode == 1 and "state=absent" in absent.stdout
    failed = subprocess.run([*cmd[:4], "prepare", *cmd[5:]], env=base_env(PRIMUS_DATA_PREP_FAULT="fail:nope"),
                            capture_output=True, text=True, timeout=30)
    assert failed.returncode == 3
    now = subprocess.run(cmd, env=base_env(), capture_output=True, text=True, timeout=30)
    assert now.returncode == 3 and "state=failed" in now.stdout and "detail=nope" in now.stdout
    ok = subprocess.run([*cmd[:4], "prepare", *cmd[5:]], env=base_env(), capture_output=True, timeout=30)
    assert ok.returncode == 0
    done = subprocess.run([*cmd, "--format", "json"], env=base_env(), capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and json.loads(done.stdout)["state"] == "complete"


def test_rank0_failure_raises_and_writes_the_reason(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    plan = dataprep.resolve_plan({"corpus": str(empty)}, {}, str(tmp_path))
    with pytest.raises(UsageError, match="the corpus holds no text"):
        dataprep.ensure_prepared(plan, node_rank=0, local_rank=0, env={}, say=lambda _: None)
    marker = json.loads(Path(plan.failed_marker).read_text())
    assert "the corpus holds no text" in marker["reason"]
    with pytest.raises(RuntimeFailure, match="the corpus holds no text"):
        dataprep.ensure_prepared(plan, node_rank=1, local_rank=0, env={}, say=lambda _: None)


def test_modules_do_not_import_torch() -> None:
    code = ("import sys, primus_runner.dataprep, primus_runner.dataprep.indexed_dataset,"
            " primus_runner.dataprep.training_data;"
            "sys.exit(1 if 'torch' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code], env=base_env(), timeout=60).returncode == 0
