"""The config command: show the merged configuration, render templates, dump for bash.

  config show [--config FILE] [--format text|json]
      every value with the file it came from (lowest to highest precedence:
      runner/.primus.yaml, ~/.primus.yaml, --config FILE)
  config render FILE
      print FILE with ${VAR} (required) and ${VAR:default} substituted
  config dump [--config FILE] --format nul
      records for runner/lib/config.sh (never evaluated by the shell)
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from primus_runner import log
from primus_runner.config import files as cfgmod
from primus_runner.config.files import config_records
from primus_runner.masking import mask
from primus_runner.shellfmt import nul_records


def _display(dotted: str, value: Any) -> str:
    leaf = dotted.rsplit(".", 1)[-1].upper()
    if isinstance(value, list):
        shown = []
        for item in value:
            text = cfgmod.scalar_text(item)
            name, sep, val = text.partition("=")
            shown.append(f"{name}={mask(name, val)}" if sep else text)
        return json.dumps(shown)
    return mask(leaf, cfgmod.scalar_text(value))


def _notes(cfg: cfgmod.Config) -> dict[str, str]:
    """What a launch really does with a shown value, where that differs."""

    notes = {}
    if "direct.gpus_per_node" in cfg.sources and cfgmod.only_system_default(cfg, "direct.gpus_per_node"):
        notes["direct.gpus_per_node"] = ("system default: a launch uses the detected count instead "
                                         "(one process per GPU, 1 without accelerator)")
    return notes


def show(cfg: cfgmod.Config, fmt: str) -> str:
    rows = [(k, _display(k, v), cfg.sources.get(k, "")) for k, v in cfgmod.flatten(cfg.values)]
    notes = _notes(cfg)
    if fmt == "json":
        return json.dumps({k: {"value": v, "source": s, **({"note": notes[k]} if k in notes else {})}
                           for k, v, s in rows}, indent=2) + "\n"
    width = max((len(k) for k, _, _ in rows), default=0)
    lines = [f"{k.ljust(width)}  {v}    # {s}" + (f" ({notes[k]})" if k in notes else "")
             for k, v, s in rows]
    return "\n".join(lines) + ("\n" if lines else "")


def _parser() -> argparse.ArgumentParser:
    from primus_runner.usertext import SuggestingParser, plain

    p = SuggestingParser(prog="primus-cli config", description=plain(__doc__),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="action", required=True)
    s = sub.add_parser("show", help="merged configuration with each value's source file")
    s.add_argument("--config", help="experiment/user config file (highest file precedence)")
    s.add_argument("--format", choices=["text", "json"], default="text")
    r = sub.add_parser("render", help="substitute ${VAR} and ${VAR:default} in FILE")
    r.add_argument("file")
    d = sub.add_parser("dump", help="records for runner/lib/config.sh")
    d.add_argument("--config")
    d.add_argument("--format", choices=["nul"], default="nul")
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.action == "render":
        sys.stdout.write(cfgmod.render_file(args.file, os.environ))
        return 0
    cfg = cfgmod.load(args.config)
    for warning in cfg.warnings:
        log.warn(warning)
    if args.action == "show":
        sys.stdout.write(show(cfg, args.format))
        return 0
    sys.stdout.buffer.write(nul_records(config_records(cfg)))
    return 0
