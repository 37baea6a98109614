"""runner/helpers/torchrun_quiet.py: torchrun's exit status kept, its process
ended without the interpreter's module teardown (launch overhead),
and nothing the interpreter's own exit would do left undone."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
QUIET = ROOT / "runner" / "helpers" / "torchrun_quiet.py"


def load_quiet() -> ModuleType:
    spec = importlib.util.spec_from_file_location("torchrun_quiet", QUIET)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("code", "status"), [(None, 0), (0, 0), (3, 3), (261, 5), (True, 1)])
def test_exit_code_is_the_status_sys_exit_gives(code: object, status: int) -> None:
    assert load_quiet().exit_code(code) == status


def test_exit_code_of_a_message_is_1_and_the_message_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert load_quiet().exit_code("torchrun: bad --nnodes") == 1
    assert capsys.readouterr().err == "torchrun: bad --nnodes\n"


def run_fast_exit(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "exit.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import importlib.util
            spec = importlib.util.spec_from_file_location("torchrun_quiet", {str(QUIET)!r})
            quiet = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(quiet)
            """
        )
        + textwrap.dedent(body)
    )
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)


def test_fast_exit_joins_threads_runs_exit_functions_and_flushes_then_skips_teardown(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    result = run_fast_exit(
        tmp_path,
        f"""
        import atexit, concurrent.futures, sys, threading, time
        marks = {str(marks)!r}

        def mark(text):
            with open(marks, "a") as fh:
                fh.write(text + "\\n")

        class Finalized:
            def __del__(self):
                mark("module teardown")

        KEEP = Finalized()
        atexit.register(mark, "atexit")
        threading.Thread(target=lambda: (time.sleep(0.3), mark("thread"))).start()
        pool = concurrent.futures.ThreadPoolExecutor(1)  # never shut down by the script
        pool.submit(lambda: (time.sleep(0.3), mark("pool")))
        sys.stdout.write("last words, no newline")
        sys.stderr.write("err tail")
        quiet.fast_exit(7)
        mark("after fast_exit")
        """,
    )
    assert result.returncode == 7, result.stderr
    assert result.stdout == "last words, no newline"
    assert result.stderr == "err tail"
    lines = marks.read_text().splitlines()
    # Threads (and the executor's work) end first, then atexit, as at a normal exit;
    # nothing after the call runs, and the module teardown is skipped on purpose.
    assert sorted(lines[:2]) == ["pool", "thread"]
    assert lines[2:] == ["atexit"]


def test_fast_exit_without_threading_shutdown_is_the_interpreters_own_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    quiet = load_quiet()
    monkeypatch.delattr(threading, "_shutdown")
    with pytest.raises(SystemExit) as done:
        quiet.fast_exit(4)
    assert done.value.code == 4


@pytest.mark.parametrize(("args", "status", "stream", "text"), [
    (["--help"], 0, "stdout", "usage:"),
    (["--no-such-option"], 2, "stderr", "unrecognized arguments: --no-such-option"),
])
def test_torchrun_argparse_exits_keep_their_status(args: list[str], status: int, stream: str, text: str) -> None:
    # The test interpreter is the project's .venv, which has torch (make setup).
    result = subprocess.run([sys.executable, str(QUIET), *args, "x.py"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == status
    assert text in getattr(result, stream)
