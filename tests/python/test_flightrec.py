"""The run monitor's flight-recorder step (python/primus_runner/monitor/flightrec.py)
and the rank's dump thread (runner/helpers/pystartup/sitecustomize.py), without torch.

The analyzer outputs in tests/fixtures/flightrec/ are torch 2.13's own
(`python -m torch.distributed.flight_recorder.fr_trace DIR -p fr-rank-
--allow-incomplete-ranks`, stdout and stderr together), captured from real gloo
runs of 2 or 3 ranks on CPU whose dumps the dump thread wrote; NAME.rcN.txt: exit
code N. mismatch: rank 0 in all_reduce, rank 1 in broadcast; hang: rank 1 asleep
while ranks 0 and 2 wait in all_reduce; partial: that hang's dumps without rank 1's;
idle: every rank asleep outside a collective; missing_dumps: the same without
--allow-incomplete-ranks; gloo_unnamed_group: the dumps as torch 2.13's gloo
writes them (its group under the name ''), before the dump thread's repair;
empty_file: a dump file of 0 bytes.
"""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from primus_runner.diagnose.runs import Run
from primus_runner.monitor import flightrec

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "flightrec"
PYSTARTUP = ROOT / "runner" / "helpers" / "pystartup"


def fixture(name: str) -> tuple[str, int]:
    path = next(FIXTURES.glob(f"{name}.rc*.txt"))
    return path.read_text(encoding="utf-8"), int(path.name.split(".rc")[1].split(".")[0])


def test_fixtures_are_the_analyzers_output() -> None:
    assert {p.name.split(".")[0] for p in FIXTURES.glob("*.txt")} == {
        "mismatch", "hang", "partial", "idle", "missing_dumps", "gloo_unnamed_group", "empty_file"}
    assert all("tabulate is not installed" in fixture(n)[0] for n in ("mismatch", "hang", "idle"))


def test_a_collective_type_mismatch_names_the_culprit_and_both_ops() -> None:
    assert flightrec.verdict_of(*fixture("mismatch")) == (
        "COLLECTIVE_TYPE_MISMATCH: culprit rank 1 in gloo:all_reduce: Expected collective type: "
        "'all_reduce' does not match found collective type: 'broadcast'")


def test_a_rank_that_never_joined_is_a_missing_rank() -> None:
    assert flightrec.verdict_of(*fixture("hang")) == (
        "missing ranks 1: not all ranks joined the collective in gloo:all_reduce (collective sequence number 3)")


def test_without_a_ranks_dump_the_analyzer_cannot_decide() -> None:
    assert flightrec.verdict_of(*fixture("partial")) == (
        "undecided: no dump from rank(s) 1 (the analyzer cannot tell what is wrong without them)")


def test_nothing_found() -> None:
    assert flightrec.verdict_of(*fixture("idle")) == "no mismatch and no missing rank in the dumps"


@pytest.mark.parametrize(("name", "last"), [
    ("missing_dumps", "AssertionError: Missing dump files from ranks {1}"),
    ("gloo_unnamed_group", "KeyError: ('0', 0)"),
    ("empty_file", "EOFError: Ran out of input"),
])
def test_an_analyzer_that_fails_is_named_with_its_last_line(name: str, last: str) -> None:
    output, code = fixture(name)
    assert code == 1
    assert flightrec.verdict_of(output, code) == f"analyzer failed: {last}"


def test_an_analyzer_that_did_not_end_or_said_nothing() -> None:
    assert flightrec.verdict_of("", None, 60) == "analyzer failed: no answer in 60 s"
    assert flightrec.verdict_of("", 2) == "analyzer failed: exit code 2, no output"
    assert flightrec.verdict_of("Rank 0 has an empty op list.\n", 0).startswith("no entries")


def test_where_a_dump_lands() -> None:
    assert flightrec.dump_file({"TORCH_FR_DUMP_TEMP_FILE": "/l/fr-"}, 3) == "/l/fr-3"
    assert flightrec.dump_file({"TORCH_NCCL_DEBUG_INFO_TEMP_FILE": "/l/old-"}, 0) == "/l/old-0"
    assert flightrec.dump_file({"PRIMUS_FR_TRIGGER": "/rc/fr-trigger-1"}, 1) == "/rc/flight-recorder-rank-1"
    assert flightrec.dump_file({}, 1) == ""


def test_a_fifo_nobody_reads_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo, 0o600)
    start = time.monotonic()
    assert "nobody reads" in flightrec._poke(str(fifo))
    assert time.monotonic() - start < 1


# -- the dump thread in a real interpreter (no torch) ---------------------------
def _rank(tmp_path: Path, code: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRIMUS_", "TORCH_"))}
    env.update(PYTHONPATH=str(PYSTARTUP), PRIMUS_FR_TRIGGER=str(tmp_path / "fr-trigger-0"), RANK="0")
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for(check: object, seconds: float = 20) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def _thread_stat(pid: int) -> tuple[str, int]:
    """(state, CPU ticks) of PID's one thread besides its main thread."""
    (task,) = [t for t in Path(f"/proc/{pid}/task").iterdir() if t.name != str(pid)]
    fields = (task / "stat").read_text().rsplit(") ", 1)[1].split()
    return fields[0], int(fields[11]) + int(fields[12])


def test_the_dump_thread_waits_in_open_imports_no_torch_and_dumps_nothing_without_it(tmp_path: Path) -> None:
    trigger = tmp_path / "fr-trigger-0"
    rank = _rank(tmp_path, "import sys, time\ntime.sleep(30)\nprint('torch' in sys.modules)\n")
    try:
        assert _wait_for(lambda: trigger.is_fifo())
        assert stat.S_IMODE(trigger.stat().st_mode) == 0o600
        # Idle: the thread sleeps in the kernel (open() of a FIFO without a writer), no CPU.
        state, ticks = _thread_stat(rank.pid)
        time.sleep(1.0)
        assert state == "S"
        assert _thread_stat(rank.pid) == ("S", ticks)
        assert flightrec._poke(str(trigger)) == ""   # the thread takes the byte
        time.sleep(0.5)
        assert rank.poll() is None                    # the workload goes on
        assert not list(tmp_path.glob("flight-recorder-rank-*"))  # no torch.distributed: no dump
        assert _wait_for(lambda: flightrec._poke(str(trigger)) == "")  # and it waits again
        with open(f"/proc/{rank.pid}/maps") as maps:
            assert "libtorch" not in maps.read()      # torch was not imported
    finally:
        rank.kill()
        _, err = rank.communicate()
    assert b"Traceback" not in err and b"primus:" not in err


def test_the_dump_thread_never_breaks_a_workload_and_says_why_once(tmp_path: Path) -> None:
    # A torch.distributed that claims to be initialized but cannot dump: one line, the rank goes on.
    fake = ("import sys, types, time\n"
            "d = types.ModuleType('torch.distributed')\n"
            "d.is_available = lambda: True\nd.is_initialized = lambda: True\nd.get_rank = lambda: 0\n"
            "sys.modules['torch.distributed'] = d\nsys.modules['torch'] = types.ModuleType('torch')\n"
            "time.sleep(30)\n")
    trigger = tmp_path / "fr-trigger-0"
    rank = _rank(tmp_path, fake)
    try:
        assert _wait_for(lambda: trigger.is_fifo())
        for _ in range(2):
            assert _wait_for(lambda: flightrec._poke(str(trigger)) == "")
            time.sleep(0.3)
        assert rank.poll() is None
    finally:
        rank.kill()
        _, err = rank.communicate()
    assert err.decode().count("primus: flight-recorder dump failed: AttributeError") == 1


# -- Neuron ---------------------------------------------------------------------
def test_the_registrys_neuron_timeouts() -> None:
    assert flightrec.registered_neuron_timeouts() == {"NEURON_RT_EXEC_TIMEOUT": "30"}


def test_neuron_timeouts_per_rank_with_the_runtimes_default() -> None:
    envs = {0: {"NEURON_RT_EXEC_TIMEOUT": "600"}, 1: {"NEURON_RT_EXEC_TIMEOUT": "600"}, 2: {}}
    assert flightrec.neuron_timeouts(envs, {"NEURON_RT_EXEC_TIMEOUT": "30"}) == [
        "NEURON_RT_EXEC_TIMEOUT=600 (rank(s) 0,1)",
        "NEURON_RT_EXEC_TIMEOUT=unset (the runtime's default: 30) (rank(s) 2)"]


def test_the_bundle_records_them_on_a_neuron_run_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PRIMUS_ACCELERATOR", raising=False)
    rank = subprocess.Popen(["sleep", "30"])
    try:
        # A fake Neuron run: a live process with the environment a Trn1 launch gives a rank.
        neuron = {"RANK": "0", "PRIMUS_ACCELERATOR": "neuron", "NEURON_RT_EXEC_TIMEOUT": "600",
                  "NEURON_RT_ROOT_COMM_ID": "10.0.0.1:7000"}
        run = Run("r1", "", "", 0, processes={rank.pid: (os.getpid(), neuron)})
        path = str(tmp_path / "neuron-timeouts.txt")
        assert flightrec.record_neuron(run, str(tmp_path)) == (
            f"the Neuron runtime's timeouts in effect: NEURON_RT_EXEC_TIMEOUT=600 (rank(s) 0) ({path})")
        assert Path(path).read_text().splitlines()[1:] == ["NEURON_RT_EXEC_TIMEOUT=600 (rank(s) 0)"]
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        cpu = Run("r2", "", "", 0, processes={rank.pid: (os.getpid(), {"RANK": "0", "PRIMUS_ACCELERATOR": "cpu"})})
        assert flightrec.record_neuron(cpu, str(tmp_path / "x")) == ""
    finally:
        rank.kill()
        rank.wait()


def test_an_nccl_rank_is_asked_through_torchs_own_pipe_and_only_there(tmp_path: Path) -> None:
    # ProcessGroupNCCL's side as torch 2.13 does it (struct DumpPipe): mkfifo
    # <stem><rank>.pipe, opened O_RDONLY | O_NONBLOCK, read now and then.
    pipe, trigger = tmp_path / "nccl-pipe-rank-1.pipe", tmp_path / "fr-trigger-1"
    os.mkfifo(pipe, 0o600)
    os.mkfifo(trigger, 0o600)
    torch_end = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
    thread_end = os.open(trigger, os.O_RDONLY | os.O_NONBLOCK)
    rank = subprocess.Popen(["sleep", "30"])
    try:
        env = {"RANK": "1", "TORCH_NCCL_DEBUG_INFO_PIPE_FILE": str(tmp_path / "nccl-pipe-rank-"),
               "PRIMUS_FR_TRIGGER": str(trigger), "TORCH_FR_DUMP_TEMP_FILE": "/logs/fr-"}
        run = Run("r", "", "", 0, processes={rank.pid: (os.getpid(), env)})
        assert flightrec.request(run) == [flightrec.Asked(1, rank.pid, "/logs/fr-1", "pipe", "")]
        assert os.read(torch_end, 128) == b"1"
        assert os.read(thread_end, 128) == b""  # nothing for the dump thread (no writer: end of file)
        os.close(torch_end)                   # the rank's pipe closed: the thread's FIFO then
        os.unlink(pipe)
        assert flightrec.request(run)[0].how == "thread"
        assert os.read(thread_end, 128) == b"1"
    finally:
        os.close(thread_end)
        rank.kill()
        rank.wait()
