"""Where prepared data comes from and goes to: the plan resolved from the
workload config's ``data`` section and the environment (the package doc gives
the precedence), and the key that tells whether existing data fits it. Pure
functions but for reading the corpus to digest it.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from primus_runner.dataprep import tokenizer
from primus_runner.errors import MissingError, UsageError, closest
from primus_runner.records import dataclass

FORMAT_VERSION = 1
DEFAULT_TIMEOUT_SECONDS = 3600.0
TIMEOUT_ENV = "PRIMUS_DATA_PREP_TIMEOUT_SECONDS"
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
