"""Prepare tokenized training data once for all nodes (reference section 8).

Protocol (works on any storage shared by the nodes; no process group needed):

- Node rank 0 / local rank 0 prepares. It tokenizes the corpus into Megatron's
  indexed format under temporary names (``<prefix>.tmp-<host>-<pid>.bin/.idx``),
  fsyncs them, renames them into place (``<prefix>.bin/.idx``), and only then
  writes the completion marker ``<train prefix>.done`` (itself written to a
  temporary name and renamed, so it is never seen half-written). If anything
  fails it writes the failure marker ``<train prefix>.failed`` holding the reason.
- Every other rank (other nodes, other local ranks of node 0) waits for one of
  the markers: on ``.done`` it reads the data; on ``.failed`` it stops at once
  naming the reason; after PRIMUS_DATA_PREP_TIMEOUT_SECONDS (default 3600) it
  stops with a timeout error.
- Both markers carry a key: a digest of the corpus content, the tokenizer, the
  split and the output prefixes. A rerun reuses data only through a ``.done``
  marker with the same key whose files pass a size check; files without such a
  marker (a run killed mid-way, a different corpus) are never used: rank 0
  removes the stale markers and its own dead temporary files and prepares again.
  A ``.failed`` marker from an earlier run is ignored by waiting ranks when the
  run ids differ (SLURM_JOB_ID.SLURM_STEP_ID, else TORCHELASTIC_RUN_ID) or, with
  no run id, when it is older than the waiting rank by more than 60 s.

Paths (environment beats the workload config's ``data`` keys, which beat defaults):

- No held-out split (``eval_fraction`` 0): TOKENIZED_DATA_PATH /
  ``tokenized_data_path``, default
  ``<workspace>/data/<corpus stem>/byte/<corpus stem>_text_document``.
- Held-out split (``eval_fraction`` > 0): training prefix
  TOKENIZED_TRAIN_DATA_PATH / ``tokenized_train_data_path``, else
  TOKENIZED_DATA_PATH / ``tokenized_data_path``, else ``<default>_train``;
  validation prefix TOKENIZED_EVAL_DATA_PATH / ``tokenized_eval_data_path``, else
  ``<training prefix given, else default>_eval``.
- ``train_data_path``: an existing tokenized prefix to train from, no preparation.
  When the key is absent it defaults to PRIMUS_TOKENIZED_DATA_PATH (the embedded
  config "references" it, reference section 3); that variable never changes where
  preparation writes.

Fault injection for tests, PRIMUS_DATA_PREP_FAULT on the preparing rank:
``fail`` or ``fail:REASON`` fails after part of the data is written;
``sleep:SECONDS`` pauses there (so a test can kill the process mid-way).

CLI: ``python3 -m primus_runner data prepare|wait|status`` (see ``--help``).
This module never imports torch.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import socket
import sys
import time
from array import array
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from primus_runner import log
from primus_runner.dataprep import indexed_dataset as idx
from primus_runner.dataprep import tokenizer
from primus_runner.errors import MissingError, PrimusError, RuntimeFailure, UsageError, closest
from primus_runner.records import dataclass

FORMAT_VERSION = 1
DEFAULT_TIMEOUT_SECONDS = 3600.0
STALE_FAILURE_GRACE_SECONDS = 60.0
MAX_POLL_SECONDS = 1.0
TIMEOUT_ENV = "PRIMUS_DATA_PREP_TIMEOUT_SECONDS"
FAULT_ENV = "PRIMUS_DATA_PREP_FAULT"
BUNDLED_CORPUS = Path(__file__).resolve().parent.parent / "data" / "corpus.txt"

CONFIG_KEYS = ("corpus", "tokenizer", "eval_fraction", "tokenized_data_path",
               "tokenized_train_data_path", "tokenized_eval_data_path",
               "train_data_path", "vocab_size", "timeout_seconds")


@dataclass(frozen=True)
class DataPlan:
    """Where the data comes from and goes to, resolved from config and environment."""

    corpus: str
    tokenizer: str
    eval_fraction: float
    train_prefix: str
    eval_prefix: str | None
    timeout: float
    existing: bool            # train_prefix is existing data: no preparation
    vocab_size: int | None    # for existing data only (None: max token + 1)
    notes: tuple[str, ...] = ()

    @property
    def done_marker(self) -> str:
        return self.train_prefix + ".done"

    @property
    def failed_marker(self) -> str:
        return self.train_prefix + ".failed"

    @property
    def prefixes(self) -> list[str]:
        return [self.train_prefix] + ([self.eval_prefix] if self.eval_prefix else [])


# ---------------------------------------------------------------- resolution


def _text(value: Any) -> str | None:
    """A path-like config value, or None for unset/empty/null."""
    if value is None:
        return None
    text = str(value).strip()
    return None if text in ("", "null", "None", "~") else text


def parse_timeout(value: Any, source: str) -> float:
    try:
        seconds = float(str(value).strip())
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise UsageError(f"{source}={value!r} is not a positive number of seconds; accepted: e.g. "
                         f"{TIMEOUT_ENV}=3600 (the time other ranks wait for node 0 to prepare data).")
    return seconds


def _eval_fraction(value: Any) -> float:
    try:
        fraction = float(value)
    except (TypeError, ValueError):
        fraction = math.nan
    if not (0.0 <= fraction < 1.0):
        raise UsageError(f"data config 'eval_fraction: {value!r}' is not a fraction; accepted: "
                         "0 (no validation split, the default) up to but not including 1, e.g. 0.1.")
    return fraction


def _absolute(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path))


def resolve_plan(data_cfg: Mapping[str, Any], env: Mapping[str, str], workspace: str) -> DataPlan:
    """The plan for ``data_cfg`` (the workload config's ``data`` section). Pure."""
    unknown = [k for k in data_cfg if k not in CONFIG_KEYS]
    if unknown:
        hint = closest(str(unknown[0]), CONFIG_KEYS)
        raise UsageError(f"unknown data config key '{unknown[0]}'"
                         + (f" (did you mean '{hint}'?)" if hint else "")
                         + f"; accepted: {', '.join(CONFIG_KEYS)}.")
    notes: list[str] = []
    timeout = DEFAULT_TIMEOUT_SECONDS
    if _text(data_cfg.get("timeout_seconds")):
        timeout = parse_timeout(data_cfg["timeout_seconds"], "data config timeout_seconds")
    if _text(env.get(TIMEOUT_ENV)):
        timeout = parse_timeout(env[TIMEOUT_ENV], TIMEOUT_ENV)
    name = str(data_cfg.get("tokenizer") or tokenizer.NAME)
    if name != tokenizer.NAME:
        raise UsageError(f"data config 'tokenizer: {name}' is not available; accepted: {tokenizer.NAME} "
                         "(bytes, vocabulary 257).")
    vocab = data_cfg.get("vocab_size")
    if vocab is not None:
        try:
            vocab = int(vocab)
        except (TypeError, ValueError):
            vocab = 0
        if vocab <= 0:
            raise UsageError(f"data config 'vocab_size: {data_cfg['vocab_size']!r}' must be a positive integer.")
    corpus = _absolute(_text(data_cfg.get("corpus")) or str(BUNDLED_CORPUS))
    fraction = _eval_fraction(data_cfg.get("eval_fraction", 0) or 0)

    existing = _text(data_cfg["train_data_path"]) if "train_data_path" in data_cfg \
        else _text(env.get("PRIMUS_TOKENIZED_DATA_PATH"))
    if existing:
        return DataPlan(corpus, name, 0.0, _absolute(existing), None, timeout, True, vocab, tuple(notes))

    def pick(env_name: str, key: str) -> str | None:
        return _text(env.get(env_name)) or _text(data_cfg.get(key))

    stem = Path(corpus).stem or "corpus"
    default = os.path.join(_absolute(workspace), "data", stem, name, f"{stem}_text_document")
    data_path = pick("TOKENIZED_DATA_PATH", "tokenized_data_path")
    train_path = pick("TOKENIZED_TRAIN_DATA_PATH", "tokenized_train_data_path")
    eval_path = pick("TOKENIZED_EVAL_DATA_PATH", "tokenized_eval_data_path")
    if fraction == 0.0:
        for label, value in (("TOKENIZED_TRAIN_DATA_PATH", train_path), ("TOKENIZED_EVAL_DATA_PATH", eval_path)):
            if value:
                notes.append(f"{label} (or its config key) is ignored: there is no held-out split "
                             "(eval_fraction is 0); the whole corpus goes to TOKENIZED_DATA_PATH.")
        return DataPlan(corpus, name, 0.0, _absolute(data_path or default), None, timeout, False, None,
                        tuple(notes))
    train = _absolute(train_path or data_path or default + "_train")
    base = train_path or data_path or default
    evaluation = _absolute(eval_path or base + "_eval")
    if evaluation == train:
        raise UsageError(f"the training and validation prefixes are the same ({train}); set "
                         "TOKENIZED_EVAL_DATA_PATH to another prefix.")
    return DataPlan(corpus, name, fraction, train, evaluation, timeout, False, None, tuple(notes))


def run_id(env: Mapping[str, str]) -> str | None:
    """An id shared by every process of one launch, when the scheduler gives one."""
    if env.get("SLURM_JOB_ID"):
        return f"slurm:{env['SLURM_JOB_ID']}.{env.get('SLURM_STEP_ID', '')}"
    elastic = env.get("TORCHELASTIC_RUN_ID", "")
    if elastic and elastic != "none":
        return f"torchelastic:{elastic}"
    return None


def corpus_digest(path: str) -> str:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
    except FileNotFoundError:
        raise MissingError(f"corpus file '{path}' (data config 'corpus') does not exist; point it at a "
                           "UTF-8 text file (paragraphs separated by blank lines) or remove the key to "
                           "use the bundled corpus.") from None
    except OSError as exc:
        raise MissingError(f"cannot read corpus file '{path}': {exc.strerror or exc}.") from None
    return digest.hexdigest()


def plan_key(plan: DataPlan, digest: str) -> str:
    fields = {"format": FORMAT_VERSION, "tokenizer": plan.tokenizer, "corpus_sha256": digest,
              "eval_fraction": plan.eval_fraction, "train": plan.train_prefix, "eval": plan.eval_prefix}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


# ---------------------------------------------------------------- markers


def read_marker(path: str) -> dict[str, Any] | None:
    """A marker's JSON, or None when absent or unreadable (a marker is always
    renamed into place whole, so unreadable means foreign or damaged)."""
    try:
        with open(path, "rb") as stream:
            data = json.loads(stream.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_marker(path: str, content: Mapping[str, Any]) -> None:
    """Write JSON to ``path`` atomically (temporary name, fsync, rename)."""
    tmp = f"{path}.tmp-{socket.gethostname()}-{os.getpid()}"
    from primus_runner.masking import mask_text

    with open(tmp, "w", encoding="utf-8") as stream:
        # A secret value (e.g. a token inside a data URL) is never written (SPEC section 3).
        stream.write(mask_text(json.dumps(content, indent=1, sort_keys=True)))
        stream.write("\n")
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(tmp, path)
    _fsync_dir(os.path.dirname(path) or ".")


def _remove(path: str) -> bool:
    try:
        os.remove(path)
        return True
    except FileNotFoundError:
        return False


def done_is_valid(plan: DataPlan, marker: Mapping[str, Any] | None, key: str) -> str | None:
    """None when ``marker`` is a completion marker for ``key`` whose files pass
    the size check; else the reason it cannot be used."""
    if marker is None:
        return "no completion marker"
    if marker.get("key") != key:
        return "completion marker from a different corpus, split or tokenizer"
    for prefix in plan.prefixes:
        problem = idx.check_sizes(prefix)
        if problem:
            return problem
    return None


def failure_is_current(marker: Mapping[str, Any], key: str, my_run: str | None, started: float) -> bool:
    """True when a failure marker belongs to this launch (see the module doc)."""
    if marker.get("key") != key:
        return False
    theirs = marker.get("run_id")
    if my_run and theirs:
        return bool(theirs == my_run)
    created = marker.get("created")
    return isinstance(created, (int, float)) and created >= started - STALE_FAILURE_GRACE_SECONDS


# ---------------------------------------------------------------- preparation


def _tmp_prefix(prefix: str) -> str:
    return f"{prefix}.tmp-{socket.gethostname()}-{os.getpid()}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_dead_temporaries(prefix: str) -> list[str]:
    """Remove ``<prefix>.tmp-<this host>-<pid>*`` files whose process is gone."""
    directory, base = os.path.split(prefix)
    mark = f"{base}.tmp-{socket.gethostname()}-"
    removed: list[str] = []
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return removed
    for name in names:
        if not name.startswith(mark):
            continue
        pid_text = name[len(mark):].split(".", 1)[0]
        if pid_text.isdigit() and not _pid_alive(int(pid_text)):
            path = os.path.join(directory, name)
            if _remove(path):
                removed.append(path)
    return removed


def _fault(env: Mapping[str, str]) -> tuple[str, str]:
    value = env.get(FAULT_ENV, "")
    kind, _, arg = value.partition(":")
    if kind not in ("", "fail", "sleep"):
        raise UsageError(f"{FAULT_ENV}={value!r}; accepted: fail, fail:REASON, sleep:SECONDS (tests only).")
    return kind, arg


def split_documents(corpus: bytes, fraction: float) -> tuple[list[bytes], list[bytes]]:
    """(training documents, validation documents): the last ceil(n * fraction)
    documents are held out; each side keeps at least one document."""
    documents = list(tokenizer.split_documents(corpus))
    if not documents:
        raise UsageError("the corpus holds no text; give a file with at least one paragraph.")
    if fraction == 0.0:
        return documents, []
    if len(documents) < 2:
        raise UsageError(f"eval_fraction {fraction} needs at least 2 documents (paragraphs separated by "
                         f"blank lines); the corpus has {len(documents)}.")
    held = min(max(1, math.ceil(len(documents) * fraction)), len(documents) - 1)
    return documents[:-held], documents[-held:]


def _write_split(documents: list[bytes], final_prefix: str, fault: tuple[str, str],
                 written: list[str]) -> int:
    tmp = _tmp_prefix(final_prefix)
    tmp_bin, tmp_idx = tmp + ".bin", tmp + ".idx"
    written.extend([tmp_bin, tmp_idx])
    writer = idx.IndexedDatasetWriter(tmp_bin, tmp_idx, idx.dtype_code_for_vocab(tokenizer.VOCAB_SIZE))
    total = 0
    try:
        half = len(documents) // 2
        for n, document in enumerate(documents):
            if n == half and fault[0]:
                writer.flush()
                if fault[0] == "sleep":
                    time.sleep(float(fault[1] or 3600))
                else:
                    raise RuntimeError(fault[1] or f"injected failure ({FAULT_ENV}=fail)")
            tokens = tokenizer.encode_document(document)
            writer.add_document(tokens)
            total += len(tokens)
    except BaseException:
        writer.abort()
        raise
    writer.finalize()
    return total


def prepare(plan: DataPlan, key: str, env: Mapping[str, str], say: Callable[[str], None]) -> dict[str, Any]:
    """Rank 0's work: tokenize, write under temporary names, rename, mark done.
    On failure write the failure marker and raise RuntimeFailure."""
    for prefix in plan.prefixes:
        os.makedirs(os.path.dirname(prefix) or ".", exist_ok=True)
    _remove(plan.failed_marker)
    if _remove(plan.done_marker):
        say(f"removed the outdated completion marker {plan.done_marker}")
    for prefix in plan.prefixes:
        for path in remove_dead_temporaries(prefix):
            say(f"removed partial output of an interrupted run: {path}")
    written: list[str] = []
    started = time.time()
    try:
        fault = _fault(env)
        with open(plan.corpus, "rb") as stream:
            corpus = stream.read()
        train_docs, eval_docs = split_documents(corpus, plan.eval_fraction)
        counts = {"train": _write_split(train_docs, plan.train_prefix, fault, written)}
        if plan.eval_prefix:
            counts["eval"] = _write_split(eval_docs, plan.eval_prefix, ("", ""), written)
        for prefix in plan.prefixes:
            tmp = _tmp_prefix(prefix)
            os.replace(tmp + ".bin", prefix + ".bin")
            os.replace(tmp + ".idx", prefix + ".idx")
            _fsync_dir(os.path.dirname(prefix) or ".")
    except BaseException as exc:
        reason = _reason(exc)
        for path in written:
            _remove(path)
        try:
            write_marker(plan.failed_marker, {"key": key, "run_id": run_id(env), "created": time.time(),
                                              "host": socket.gethostname(), "pid": os.getpid(),
                                              "reason": reason})
        except OSError as marker_exc:
            log.error(f"could not write the failure marker {plan.failed_marker} "
                      f"({marker_exc.strerror or marker_exc}); the other ranks will wait until their timeout.")
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        kind = type(exc) if isinstance(exc, PrimusError) else RuntimeFailure
        raise kind(f"preparing the tokenized data at {plan.train_prefix} failed: {reason}. "
                   f"Wrote {plan.failed_marker} so the other ranks stop.") from None
    marker = {"key": key, "run_id": run_id(env), "created": time.time(), "host": socket.gethostname(),
              "pid": os.getpid(), "format": FORMAT_VERSION, "tokenizer": plan.tokenizer,
              "vocab_size": tokenizer.VOCAB_SIZE, "corpus": plan.corpus, "eval_fraction": plan.eval_fraction,
              "train_prefix": plan.train_prefix, "eval_prefix": plan.eval_prefix, "tokens": counts,
              "seconds": round(time.time() - started, 3)}
    write_marker(plan.done_marker, marker)
    say(f"prepared {counts['train']} training tokens at {plan.train_prefix}"
        + (f" and {counts['eval']} validation tokens at {plan.eval_prefix}" if plan.eval_prefix else "")
        + f" in {marker['seconds']} s")
    return marker


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.strerror or exc} ({exc.filename})"
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, (UsageError, RuntimeError, ValueError)) else f"{type(exc).__name__}: {text}"


def wait_for(plan: DataPlan, key: str, env: Mapping[str, str], say: Callable[[str], None],
             clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Wait for node rank 0's completion or failure marker."""
    started = clock()
    mine = run_id(env)
    interval, announced, next_note = 0.05, False, started + 60
    while True:
        marker = read_marker(plan.done_marker)
        if done_is_valid(plan, marker, key) is None:
            assert marker is not None
            return marker
        failed = read_marker(plan.failed_marker)
        if failed is not None and failure_is_current(failed, key, mine, started):
            raise RuntimeFailure(
                f"node rank 0 (host {failed.get('host')}, pid {failed.get('pid')}) failed to prepare the "
                f"tokenized data at {plan.train_prefix}: {failed.get('reason')} (from {plan.failed_marker}). "
                "Fix the cause shown in node 0's log and relaunch.")
        now = clock()
        waited = now - started
        if waited >= plan.timeout:
            raise RuntimeFailure(
                f"timed out after {plan.timeout:g} s ({TIMEOUT_ENV}) waiting for node rank 0 to prepare the "
                f"tokenized data at {plan.train_prefix}: neither {plan.done_marker} nor a current "
                f"{plan.failed_marker} appeared. Check node 0's log; the prefix must be on storage shared "
                f"by all nodes; raise {TIMEOUT_ENV} for a large corpus.")
        if not announced:
            say(f"waiting for node rank 0 to prepare {plan.train_prefix} (timeout {plan.timeout:g} s)")
            announced = True
        elif now >= next_note:
            say(f"still waiting for {plan.done_marker} after {waited:.0f} s")
            next_note = now + 60
        sleep(min(interval, max(plan.timeout - waited, 0.01)))
        interval = min(interval * 1.5, MAX_POLL_SECONDS)


def ensure_prepared(plan: DataPlan, *, node_rank: int, local_rank: int, env: Mapping[str, str],
                    say: Callable[[str], None] = log.info, wait_only: bool = False) -> dict[str, Any]:
    """Run the protocol for one rank; return the completion marker."""
    for note in plan.notes:
        log.warn(note)
    key = plan_key(plan, corpus_digest(plan.corpus))
    if node_rank != 0 or local_rank != 0 or wait_only:
        return wait_for(plan, key, env, say)
    marker = read_marker(plan.done_marker)
    problem = done_is_valid(plan, marker, key)
    if problem is None:
        assert marker is not None
        say(f"reusing the tokenized data at {plan.train_prefix} (complete: {plan.done_marker})")
        return marker
    if marker is not None or any(os.path.exists(p + ".bin") or os.path.exists(p + ".idx") for p in plan.prefixes):
        say(f"not reusing the files at {plan.train_prefix}: {problem}; preparing again")
    else:
        say(f"preparing the tokenized data at {plan.train_prefix} from {plan.corpus}")
    return prepare(plan, key, env, say)


# ---------------------------------------------------------------- API for the workload


def load_tokens(prefix: str) -> array[int]:
    """All tokens of an indexed dataset, in order (documents concatenated)."""
    try:
        return idx.read_dataset(prefix).tokens
    except idx.IndexedDatasetError as exc:
        raise RuntimeFailure(f"tokenized data at {prefix} is unusable: {exc}") from None


def training_tokens(data_cfg: Mapping[str, Any], *, workspace: str, node_rank: int, local_rank: int,
                    env: Mapping[str, str] | None = None) -> tuple[array[int], int]:
    """(token ids of the training split, vocabulary size) for one rank."""
    env = os.environ if env is None else env
    plan = resolve_plan(data_cfg, env, workspace)
    if plan.existing:
        for path in (idx.bin_path(plan.train_prefix), idx.idx_path(plan.train_prefix)):
            if not os.path.isfile(path):
                raise MissingError(f"train_data_path / PRIMUS_TOKENIZED_DATA_PATH prefix '{plan.train_prefix}': "
                                   f"{path} does not exist; give the prefix of an existing .bin/.idx pair "
                                   "(without the extension) or unset it to prepare the bundled corpus.")
        tokens = load_tokens(plan.train_prefix)
        vocab = plan.vocab_size or (max(tokens) + 1 if len(tokens) else 1)
        if len(tokens) and max(tokens) >= vocab:
            raise UsageError(f"data config vocab_size {vocab} is smaller than the largest token id "
                             f"{max(tokens)} in {plan.train_prefix}.")
        return tokens, int(vocab)
    marker = ensure_prepared(plan, node_rank=node_rank, local_rank=local_rank, env=env)
    return load_tokens(plan.train_prefix), int(marker.get("vocab_size") or tokenizer.VOCAB_SIZE)


# ---------------------------------------------------------------- CLI


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", help="workload YAML whose 'data' section is used (rendered with ${VAR})")
    common.add_argument("--corpus", help="text corpus (default: the bundled corpus)")
    common.add_argument("--tokenized-data-path", help="output prefix (TOKENIZED_DATA_PATH wins)")
    common.add_argument("--eval-fraction", type=float, help="fraction of documents held out for validation")
    common.add_argument("--workspace", help="workspace for the default prefix (default $PRIMUS_WORKSPACE or ./output)")
    common.add_argument("--timeout", help=f"seconds to wait for node 0 ({TIMEOUT_ENV} wins; default 3600)")
    common.add_argument("--format", choices=("text", "json"), default="text")
    parser = argparse.ArgumentParser(prog="python3 -m primus_runner data",
                                     description="Prepare tokenized data once for all nodes (reference section 8).")
    sub = parser.add_subparsers(dest="action", required=True)
    p = sub.add_parser("prepare", parents=[common],
                       help="node rank 0 / local rank 0 prepares (or reuses); other ranks wait",
                       description="Run the protocol for this rank: node rank 0 / local rank 0 prepares or "
                       "reuses the data, every other rank waits for it. Exit 0 when the data is ready, 3 on "
                       "failure or timeout.")
    p.add_argument("--node-rank", type=int, help="default $NODE_RANK or 0")
    p.add_argument("--local-rank", type=int, help="default $LOCAL_RANK or 0")
    sub.add_parser("wait", parents=[common], help="wait for the data (never prepares)",
                   description="Wait for the completion marker; exit 0 when ready, 3 on failure or timeout.")
    sub.add_parser("status", parents=[common], help="complete | failed | partial | absent",
                   description="Print the state of the data: complete (exit 0), failed (exit 3, with the "
                   "reason), partial or absent (exit 1).")
    return parser


def _cfg_from_args(args: argparse.Namespace, env: Mapping[str, str]) -> tuple[dict[str, Any], str]:
    cfg: dict[str, Any] = {}
    workspace = args.workspace
    if args.config:
        from primus_runner.config import load_rendered_yaml

        loaded = load_rendered_yaml(args.config, env)
        cfg.update(dict(loaded.get("data") or {}))
        workspace = workspace or loaded.get("workspace")
    for key, value in (("corpus", args.corpus), ("tokenized_data_path", args.tokenized_data_path),
                       ("eval_fraction", args.eval_fraction), ("timeout_seconds", args.timeout)):
        if value is not None:
            cfg[key] = value
    return cfg, str(workspace or env.get("PRIMUS_WORKSPACE") or "./output")


def _int_env(env: Mapping[str, str], name: str) -> int:
    value = env.get(name, "0") or "0"
    try:
        return int(value)
    except ValueError:
        raise UsageError(f"{name}={value!r} is not an integer rank.") from None


def status_of(plan: DataPlan, key: str) -> tuple[str, str]:
    marker = read_marker(plan.done_marker)
    if done_is_valid(plan, marker, key) is None:
        return "complete", plan.done_marker
    failed = read_marker(plan.failed_marker)
    if failed is not None and failed.get("key") == key:
        return "failed", str(failed.get("reason"))
    if any(os.path.exists(p + ext) for p in plan.prefixes for ext in (".bin", ".idx")) or marker is not None:
        return "partial", done_is_valid(plan, marker, key) or ""
    return "absent", ""


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    env = os.environ
    cfg, workspace = _cfg_from_args(args, env)
    plan = resolve_plan(cfg, env, workspace)
    if plan.existing:
        raise UsageError(f"train_data_path / PRIMUS_TOKENIZED_DATA_PATH ({plan.train_prefix}) names existing "
                         "data: there is nothing to prepare. Unset it to prepare the corpus.")

    def emit(result: dict[str, Any]) -> None:
        if args.format == "json":
            print(json.dumps(result, sort_keys=True))
        else:
            for name, value in result.items():
                print(f"{name}={'' if value is None else value}")

    if args.action == "status":
        key = plan_key(plan, corpus_digest(plan.corpus))
        state, detail = status_of(plan, key)
        emit({"state": state, "detail": detail, "train_prefix": plan.train_prefix, "eval_prefix": plan.eval_prefix})
        return {"complete": 0, "failed": 3}.get(state, 1)
    say: Callable[[str], None] = (lambda text: print(text, file=sys.stderr)) if args.format == "json" else log.info
    if args.action == "wait":
        marker = ensure_prepared(plan, node_rank=0, local_rank=0, env=env, say=say, wait_only=True)
    else:
        node = args.node_rank if args.node_rank is not None else _int_env(env, "NODE_RANK")
        local = args.local_rank if args.local_rank is not None else _int_env(env, "LOCAL_RANK")
        marker = ensure_prepared(plan, node_rank=node, local_rank=local, env=env, say=say)
    emit({"train_prefix": plan.train_prefix, "eval_prefix": plan.eval_prefix,
          "vocab_size": marker.get("vocab_size"), "train_tokens": (marker.get("tokens") or {}).get("train")})
    return 0
