"""``python3 -m primus_runner data prepare|wait|status`` (see ``--help``): the command
line of data preparation. Parses options and prints; the plan, the markers and the
work are the package's other modules."""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from primus_runner import log
from primus_runner.dataprep import ensure_prepared
from primus_runner.dataprep.markers import done_is_valid, read_marker
from primus_runner.dataprep.plan import TIMEOUT_ENV, DataPlan, corpus_digest, plan_key, resolve_plan
from primus_runner.errors import UsageError


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", help="workload YAML whose 'data' section is used (rendered with ${VAR})")
    common.add_argument("--corpus", help="text corpus (default: the bundled corpus)")
    common.add_argument("--tokenized-data-path", help="output prefix (TOKENIZED_DATA_PATH wins)")
    common.add_argument("--eval-fraction", type=float, help="fraction of documents held out for validation")
    common.add_argument("--workspace", help="workspace for the default prefix (default $PRIMUS_WORKSPACE or ./output)")
    common.add_argument("--timeout", help=f"seconds to wait for node 0 ({TIMEOUT_ENV} wins; default 3600)")
    common.add_argument("--format", choices=("text", "json"), default="text")
    parser = argparse.ArgumentParser(
        prog="python3 -m primus_runner data",
        description="Prepare tokenized data once for all nodes (docs/run-on-one-node.md, \"Data preparation\").")
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
        from primus_runner.config.files import load_rendered_yaml

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
