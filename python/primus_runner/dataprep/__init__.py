"""Prepare tokenized training data once for all nodes (Primus docs, environment variables, section 8).

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
  config "references" it, Primus docs, environment variables, section 3); that variable never changes where
  preparation writes.

Fault injection for tests, PRIMUS_DATA_PREP_FAULT on the preparing rank:
``fail`` or ``fail:REASON`` fails after part of the data is written;
``sleep:SECONDS`` pauses there (so a test can kill the process mid-way).

CLI: ``python3 -m primus_runner data prepare|wait|status`` (see ``--help``;
dataprep/cli.py). The plan is dataprep/plan.py, the markers dataprep/markers.py.
This module never imports torch.
"""
from __future__ import annotations

import math
import os
import socket
import time
from array import array
from collections.abc import Callable, Mapping
from typing import Any

from primus_runner import log
from primus_runner.dataprep import indexed_dataset as idx
from primus_runner.dataprep import tokenizer
from primus_runner.dataprep.markers import (
    done_is_valid,
    failure_is_current,
    fsync_dir,
    read_marker,
    remove_file,
    write_marker,
)
from primus_runner.dataprep.plan import (
    BUNDLED_CORPUS,
    CONFIG_KEYS,
    FORMAT_VERSION,
    TIMEOUT_ENV,
    DataPlan,
    corpus_digest,
    parse_timeout,
    plan_key,
    resolve_plan,
    run_id,
)
from primus_runner.errors import MissingError, PrimusError, RuntimeFailure, UsageError

# The package's API: the plan and markers (plan.py, markers.py) and the
# protocol below; the command line is dataprep/cli.py.
__all__ = [
    "BUNDLED_CORPUS", "CONFIG_KEYS", "FORMAT_VERSION", "TIMEOUT_ENV", "DataPlan", "corpus_digest",
    "done_is_valid", "ensure_prepared", "failure_is_current", "load_tokens", "parse_timeout",
    "plan_key", "prepare", "read_marker", "resolve_plan", "run_id", "training_tokens", "wait_for",
    "write_marker",
]

MAX_POLL_SECONDS = 1.0
FAULT_ENV = "PRIMUS_DATA_PREP_FAULT"


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
            if remove_file(path):
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
    remove_file(plan.failed_marker)
    if remove_file(plan.done_marker):
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
            fsync_dir(os.path.dirname(prefix) or ".")
    except BaseException as exc:
        reason = _reason(exc)
        for path in written:
            remove_file(path)
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
