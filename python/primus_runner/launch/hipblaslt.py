"""The hipBLASLt tuning flow's decisions, for runner/helpers/hooks/train/pretrain/hipblaslt_tuning.sh.

The hook (whose header documents the flow, stages 0-3) starts this module once,
only when its gate is open (one of PRIMUS_HIPBLASLT_TUNING, PRIMUS_DETERMINISTIC,
TE_HIPBLASLT_TUNING, PRIMUS_HIPBLASLT_TUNING_STAGE set), and does what the plan
says, in order: NUL records ``kind\\0a\\0b\\0``:

  info MSG / warn MSG         a hook log line
  config-error MSG            exit 78 (the launch exits 2)
  missing MSG                 exit 66 (the launch exits 1)
  mkdir DIR                   create DIR (said, not done, under a dry run)
  arg WORD                    one argument of the tuner's command
  run python|exec TUNER       run TUNER (with the runner's Python for python) and the args
  env NAME VALUE              an env.NAME=VALUE line for the launcher

:func:`plan` is pure: the environment, the workload arguments, the working
directory and the file checks it needs are its inputs.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping, Sequence

from primus_runner.facts import DISTRIBUTED_DEFAULTS

RESULT_NAME = "tune_hipblas_gemm_results.txt"
STAGES = ("0", "1", "2", "3")

Record = tuple[str, str, str]


class Files:
    """The file checks of the flow (a test passes its own)."""

    def is_file(self, path: str) -> bool:
        return os.path.isfile(path)

    def non_empty(self, path: str) -> bool:
        return os.path.getsize(path) > 0

    def has_entries(self, directory: str) -> bool:
        """Anything but dot files in DIRECTORY (the shell's "$dir"/* glob)."""
        try:
            return any(not name.startswith(".") for name in os.listdir(directory))
        except OSError:
            return False


class Stop(Exception):
    """The plan ends with this record (a configuration error or a missing file)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.record: Record = (kind, message, "")


def _digits(value: str) -> bool:
    return value.isascii() and value.isdigit()


def _switch(env: Mapping[str, str], name: str) -> bool:
    value = env.get(name) or "0"
    if value not in ("0", "1"):
        raise Stop("config-error", f"{name}='{value}' is not a switch; accepted: 1 (on) or 0 / unset (off).")
    return value == "1"


def _count(env: Mapping[str, str], name: str, default: str) -> str:
    value = env.get(name) or default
    if not _digits(value):
        raise Stop("config-error", f"{name}='{value}' is not a non-negative integer; accepted: e.g. {name}={default}.")
    return value


def _te_counts(run: str, algo: str) -> list[Record]:
    return [("env", "TE_HIPBLASLT_TUNING_RUN_COUNT", run), ("env", "TE_HIPBLASLT_TUNING_ALGO_COUNT", algo)]


def _te_online(env: Mapping[str, str]) -> list[Record]:
    """Stage-0 style counts: the user's, else 10 / 50."""
    run = _count(env, "TE_HIPBLASLT_TUNING_RUN_COUNT", "10")
    algo = _count(env, "TE_HIPBLASLT_TUNING_ALGO_COUNT", "50")
    return _te_counts(run, algo)


def _dir_of(path: str) -> str:
    """The shell's ${path%/*}: PATH itself when it has no slash."""
    return path.rpartition("/")[0] if "/" in path else path


def tune_root(env: Mapping[str, str], args: Sequence[str], cwd: str) -> str:
    """<W>/tune_hipblaslt/<PRIMUS_MODEL, else the last --config's stem, else default>;
    W = PRIMUS_WORKSPACE, else PRIMUS_PATH/output, else ./output, made absolute."""
    config = ""
    rest = list(args)
    while rest:
        word = rest.pop(0)
        if word == "--config":
            config = rest.pop(0) if rest else ""
        elif word.startswith("--config="):
            config = word[len("--config="):]
    tag = env.get("PRIMUS_MODEL", "")
    if not tag and config:
        tag = config.rpartition("/")[2]
        tag = tag.removesuffix(".yaml").removesuffix(".yml")
    tag = tag or "default"
    if env.get("PRIMUS_WORKSPACE"):
        workspace = env["PRIMUS_WORKSPACE"]
    elif env.get("PRIMUS_PATH"):
        workspace = env["PRIMUS_PATH"] + "/output"
    else:
        workspace = "./output"
    if not workspace.startswith("/"):
        workspace = cwd + "/" + workspace.removeprefix("./")
    return f"{workspace.removesuffix('/')}/tune_hipblaslt/{tag}"


def _dump_shapes(env: Mapping[str, str], root: str) -> list[Record]:
    if "HIPBLASLT_LOG_LEVEL" in env:
        raise Stop("config-error", "stage 1 (dump GEMM shapes) needs HIPBLASLT_LOG_LEVEL unset, but it is "
                   f"'{env['HIPBLASLT_LOG_LEVEL']}': hipBLASLt then ignores HIPBLASLT_LOG_MASK and no level logs "
                   "the Bench lines, so no shape would be dumped. Unset HIPBLASLT_LOG_LEVEL for this stage.")
    mask = env.get("HIPBLASLT_LOG_MASK") or "32"
    if not _digits(mask):
        raise Stop("config-error",
                   f"HIPBLASLT_LOG_MASK='{mask}' is not a number; accepted: a bit mask such as 32 (Bench).")
    mask = str(int(mask) | 32)  # the Bench bit; decimal, as hipBLASLt reads it
    node = env.get("NODE_RANK") or "0"
    file = env.get("HIPBLASLT_LOG_FILE") or f"{root}/gemm_shape/dump_hipblaslt_gemm_shape_{node}_%i.txt"
    return [("mkdir", _dir_of(file), ""),
            ("info", f"stage 1: dumping GEMM shapes to {file} (HIPBLASLT_LOG_MASK={mask})", ""),
            ("env", "HIPBLASLT_LOG_MASK", mask), ("env", "HIPBLASLT_LOG_FILE", file),
            ("env", "HIPBLASLT_TUNING_OVERRIDE_FILE", "")]


def _tune(env: Mapping[str, str], root: str, files: Files) -> list[Record]:
    skip: Record = ("env", "PRIMUS_SKIP_MAIN_LAUNCH", "1")
    if (env.get("NODE_RANK") or "0").strip("0"):
        return [("info", "stage 2: offline tuning runs on node 0 only; this node skips the training launch", ""), skip]
    shapes, result = f"{root}/gemm_shape", f"{root}/gemm_tune/{RESULT_NAME}"
    base = env.get("PRIMUS_PATH") or env.get("PRIMUS_ROOT", "")
    tuner = env.get("PRIMUS_HIPBLASLT_TUNER") or f"{base}/examples/offline_tune/offline_tune_gemm.py"
    if not files.is_file(tuner):
        raise Stop("missing", f"the hipBLASLt offline tuner '{tuner}' does not exist; set PRIMUS_HIPBLASLT_TUNER to "
                   "Primus's examples/offline_tune/offline_tune_gemm.py (or another tuner taking "
                   "--dump-shape-path-or-file, --tune-result-path, --num-devices).")
    if not files.has_entries(shapes):
        raise Stop("config-error", f"stage 2 (offline tune) found no GEMM shapes in {shapes}; run stage 1 first "
                   "(PRIMUS_HIPBLASLT_TUNING_STAGE=1) with the same PRIMUS_WORKSPACE (or PRIMUS_PATH) and model.")
    gpus = env.get("GPUS_PER_NODE") or DISTRIBUTED_DEFAULTS["GPUS_PER_NODE"]
    if not (_digits(gpus) and gpus[0] != "0"):
        raise Stop("config-error", f"GPUS_PER_NODE='{gpus}' is not a positive integer.")
    words = ["--dump-shape-path-or-file", shapes, "--tune-result-path", result, "--num-devices", gpus]
    return [("mkdir", _dir_of(result), ""), *(("arg", word, "") for word in words),
            ("run", "python" if tuner.endswith(".py") else "exec", tuner),
            ("info", f"stage 2: tuning result in {result}; the training launch is skipped (run stage 3 to use it)", ""),
            skip]


def _apply(env: Mapping[str, str], root: str, cwd: str, files: Files) -> list[Record]:
    given = env.get("HIPBLASLT_TUNING_OVERRIDE_FILE", "")
    file = given or f"{root}/gemm_tune/{RESULT_NAME}"
    if not file.startswith("/"):
        file = f"{cwd}/{file}"
    if not files.is_file(file):
        if given:
            raise Stop("config-error", f"stage 3 (apply tuned kernels): HIPBLASLT_TUNING_OVERRIDE_FILE='{given}' does "
                       "not exist; point it at a stage-2 result file (tune_hipblas_gemm_results.txt) reachable "
                       "from every node.")
        raise Stop("config-error", f"stage 3 (apply tuned kernels): no tuning result at {file} and "
                   "HIPBLASLT_TUNING_OVERRIDE_FILE is unset; run stage 2 first (PRIMUS_HIPBLASLT_TUNING_STAGE=2) "
                   "or set HIPBLASLT_TUNING_OVERRIDE_FILE.")
    out: list[Record] = []
    if not files.non_empty(file):
        out.append(("warn", f"HIPBLASLT_TUNING_OVERRIDE_FILE {file} is empty; no kernel will be overridden.", ""))
    return [*out, ("info", f"stage 3: applying tuned kernels from {file}", ""),
            ("env", "HIPBLASLT_TUNING_OVERRIDE_FILE", file)]


def _steps(env: Mapping[str, str], args: Sequence[str], cwd: str, files: Files) -> Iterator[Record]:
    tuning = _switch(env, "PRIMUS_HIPBLASLT_TUNING")
    deterministic = _switch(env, "PRIMUS_DETERMINISTIC")
    te = _switch(env, "TE_HIPBLASLT_TUNING")
    stage = env.get("PRIMUS_HIPBLASLT_TUNING_STAGE") or "0"
    if stage not in STAGES:
        raise Stop("config-error", f"PRIMUS_HIPBLASLT_TUNING_STAGE='{stage}' is not a stage; accepted: 0 (off), "
                   "1 (dump shapes), 2 (offline tune), 3 (apply tuned kernels).")
    if deterministic:
        if tuning:
            # The rule lives once, in the rules engine (hipblaslt_vs_deterministic): the
            # launcher's env check, after the hooks and before anything starts, refuses it.
            yield ("info", "deterministic mode with hipBLASLt tuning requested: nothing applied "
                   "(env check refuses this combination).", "")
            return
        # TE_HIPBLASLT_TUNING=1: the counts switch TE's online tuning off (rule te_tuning_vs_deterministic).
        if stage != "0":
            yield ("warn", f"PRIMUS_HIPBLASLT_TUNING_STAGE={stage} is ignored: PRIMUS_HIPBLASLT_TUNING is not 1.", "")
        yield from _te_counts("0", "0")
        return
    if not tuning:
        if stage != "0":
            yield ("warn", f"PRIMUS_HIPBLASLT_TUNING_STAGE={stage} is ignored: PRIMUS_HIPBLASLT_TUNING is not 1 "
                   "(set it to 1 to enable the tuning flow).", "")
        if te:
            yield from _te_online(env)
        return
    if stage == "0":
        yield from _te_online(env)
        return
    if te:
        yield ("warn", f"TE_HIPBLASLT_TUNING=1 is overridden during hipBLASLt stage {stage}: TE online tuning is "
               "disabled (counts 0).", "")
    root = tune_root(env, args, cwd)
    if stage == "1":
        yield from _dump_shapes(env, root)
    elif stage == "2":
        yield from _tune(env, root, files)
    else:
        yield from _apply(env, root, cwd, files)
    yield from _te_counts("0", "0")


def plan(env: Mapping[str, str], args: Sequence[str], cwd: str, files: Files | None = None) -> list[Record]:
    """The hook's records for ENV and the workload ARGS in CWD; a configuration
    error or a missing file is the last record (nothing after it is done)."""
    out: list[Record] = []
    try:
        for record in _steps(env, args, cwd, files or Files()):
            out.append(record)
    except Stop as stop:
        out.append(stop.record)
    return out


def _cwd(env: Mapping[str, str]) -> str:
    """The shell's $PWD when it names this directory (a path through a symlink stays so)."""
    pwd = env.get("PWD", "")
    try:
        if pwd.startswith("/") and os.path.samefile(pwd, "."):
            return pwd
    except OSError:
        pass
    return os.getcwd()


def main(argv: list[str]) -> int:
    if argv[:1] != ["plan"]:
        print("usage: python3 -m primus_runner.launch.hipblaslt plan [WORKLOAD ARGS...]", file=sys.stderr)
        return 2
    from primus_runner.shellfmt import nul_records

    sys.stdout.buffer.write(nul_records(plan(os.environ, argv[1:], _cwd(os.environ))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
