"""``detect``: the one detection path of every entry point (docs/configuration.md "Detection and rank mapping" and
environment layers).

The launcher's ``launch prepare``/``serve`` step, sourcing base_env.sh by hand
(through ``detect --format nul``) and a user running ``python3 -m primus_runner
detect`` all call :func:`detected_env`, so the same host gives the same values
everywhere: the distributed mapping (ranks.py: user > scheduler > config >
reference defaults), the devices (accelerator, GPU model and count, Neuron
instance facts; devices.py), GPUS_PER_NODE = the detected GPU count unless the
user, a scheduler or their own config set it, and the NIC/HCA variables
(nics.py). A value the user exported is never replaced.

Output formats: ``shell`` (``export NAME=VALUE`` lines quoted for bash),
``json`` ({"env": ..., "origins": ..., "failures": [...]}), ``nul`` (records
``kind\\0name\\0value\\0`` for base_env.sh: ``env`` values, ``origin`` labels,
``fail`` reasons, then ``end``). A step that fails (a contradictory scheduler
environment, a missing psutil) is reported and the others still run; the exit
status is then that failure's (2 usage, 1 missing dependency).
"""
from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from primus_runner.config import files as cfgmod
from primus_runner.errors import PrimusError, UsageError
from primus_runner.facts import ACCELERATORS
from primus_runner.shellfmt import nul_records

DIST_KEYS = {
    "MASTER_ADDR": "direct.master_addr",
    "MASTER_PORT": "direct.master_port",
    "NNODES": "direct.nnodes",
    "NODE_RANK": "direct.node_rank",
    "GPUS_PER_NODE": "direct.gpus_per_node",
}
# Bookkeeping the launcher exports next to the detected values.
BOOKKEEPING = ("PRIMUS_DETECTION_DONE", "PRIMUS_DETECTED_VARS")


def config_defaults(cfg: cfgmod.Config) -> dict[str, str]:
    """Distributed defaults taken from the config files."""
    out = {}
    for name, key in DIST_KEYS.items():
        value = cfgmod.scalar_text(cfg.get(key))
        if name == "MASTER_PORT" and cfgmod.only_system_default(cfg, key):
            continue  # the reference default: a Slurm step derives its own (scheduler/variables.py slurm_step_port)
        if value != "":
            out[name] = value
    return out


def _gpus_per_node_is_a_default(origin: str | None, cfg: cfgmod.Config) -> bool:
    """True when GPUS_PER_NODE comes only from runner/.primus.yaml or the
    reference (not from the user, a scheduler, ~/.primus.yaml or --config)."""
    if origin not in ("config", "default"):
        return False
    source = cfg.sources.get(DIST_KEYS["GPUS_PER_NODE"])
    return source is None or os.path.abspath(source) == os.path.abspath(cfgmod.system_config_path())


def count_source(origin: str | None, env: Mapping[str, str], out: Mapping[str, str],
                 cfg: cfgmod.Config) -> str:
    """Where GPUS_PER_NODE (the process count per node) came from, for the launch summary."""
    if origin == "detected":
        return f"one process per detected GPU ({out.get('PRIMUS_GPU_COUNT', '?')})"
    if origin == "no-accelerator":
        return "no accelerator detected: 1; set GPUS_PER_NODE, --env GPUS_PER_NODE=N or direct.gpus_per_node for more"
    if origin == "config":
        return f"config direct.gpus_per_node in {cfg.sources.get(DIST_KEYS['GPUS_PER_NODE'], '?')}"
    if origin == "exported":
        return "GPUS_PER_NODE exported"
    if origin in (None, "default"):
        return "reference default"
    return f"from {origin}"


def _step_failed(step: str, exc: BaseException, failures: list[tuple[str, str, int]] | None) -> None:
    """Record a failed step (soft mode) or raise it again (the launcher)."""
    if failures is None:
        raise exc
    code = exc.exit_code if isinstance(exc, PrimusError) else 1
    reason = str(exc) if isinstance(exc, PrimusError) else f"{type(exc).__name__}: {exc}"
    failures.append((step, reason, code))


def detected_env(env: Mapping[str, str], cfg: cfgmod.Config, accelerator: str | None,
                 sysfs_root: str, dev_root: str, origins: dict[str, str] | None = None,
                 failures: list[tuple[str, str, int]] | None = None, *,
                 probes: bool = True, pick_port: bool = False, wait_peers: bool = False) -> dict[str, str]:
    """Everything a launch exports before the shell layers run.

    ``origins`` (when given) receives where each value came from; with
    ``failures`` given a failing step is appended there as (step, reason,
    exit code) instead of raised, and the other steps still run. With
    ``pick_port`` (a launch, not sourcing by hand) a single-node launch nobody
    gave a MASTER_PORT gets a free one (rendezvous.wants_free_port), origin "picked"."""
    from primus_runner import network as nics
    from primus_runner.cluster import ranks
    from primus_runner.hardware import devices, placement

    out: dict[str, str] = {}
    where: dict[str, str] = {} if origins is None else origins
    gpus_origin: str | None = "exported" if "GPUS_PER_NODE" in env else "default"
    notes: list[str] = []
    try:
        mapping = ranks.resolve(env, config_defaults(cfg))
        notes += mapping.notes
        if wait_peers and probes:
            from primus_runner.k8s import pod

            if pod.wanted(env):
                from primus_runner import log

                pod.wait({**env, **mapping.as_env()}, log=log.info,
                         rank_origin=mapping.origins.get("NODE_RANK", ""))
        if probes:  # a host probe (name resolution); env check --no-host-probes skips it
            ranks.check_master_resolves(mapping, sysfs_root)
    except (PrimusError, ImportError, OSError) as exc:
        _step_failed("ranks", exc, failures)
    else:
        for name, value in mapping.as_env().items():
            out[name] = value
            where[name] = mapping.origins.get(name, "default")
        if pick_port:
            from primus_runner.cluster import rendezvous

            if rendezvous.wants_free_port(mapping):
                out["MASTER_PORT"] = str(rendezvous.free_port(sysfs_root))
                where["MASTER_PORT"] = "picked"
        gpus_origin = mapping.origins.get("GPUS_PER_NODE")
    view = {**env, **out}
    wanted = accelerator or env.get("PRIMUS_ACCELERATOR") or cfgmod.scalar_text(cfg.get("direct.accelerator"))
    if wanted and wanted != "auto":
        view["PRIMUS_ACCELERATOR"] = wanted
    found: dict[str, str] = {}
    try:
        found_devices = devices.detect_devices(sysfs_root, dev_root, view)
        found = found_devices.as_env()
        notes += found_devices.notes
        local_rank = placement.srun_native_local_rank(env, found_devices)
        if local_rank is not None:
            out["LOCAL_RANK"], note = local_rank
            where["LOCAL_RANK"] = "detected"
            notes.append(note)
    except (PrimusError, ImportError, OSError) as exc:
        _step_failed("devices", exc, failures)
    for name, value in found.items():
        if name not in env:
            out[name] = value
            where[name] = "detected"
    if _gpus_per_node_is_a_default(gpus_origin, cfg) and found.get("PRIMUS_GPU_COUNT", "0") not in ("", "0"):
        # One process per detected GPU unless the user or their config said otherwise.
        out["GPUS_PER_NODE"] = found["PRIMUS_GPU_COUNT"]
        where["GPUS_PER_NODE"] = "detected"
    elif (_gpus_per_node_is_a_default(gpus_origin, cfg)
          and (wanted if wanted not in ("", "auto") else found.get("PRIMUS_ACCELERATOR")) == "cpu"):
        # No accelerator: one process, not the reference's 8 per node (docs/run-on-one-node.md,
        # "What you see, and where it goes"); the user, a scheduler or their config can say more.
        out["GPUS_PER_NODE"] = "1"
        where["GPUS_PER_NODE"] = "no-accelerator"
    if wanted and wanted != "auto":
        out["PRIMUS_ACCELERATOR"] = wanted
        where["PRIMUS_ACCELERATOR"] = ("cli" if accelerator else
                                       "exported" if env.get("PRIMUS_ACCELERATOR") == wanted else "config")
    try:
        nic_result = nics.detect_nics(sysfs_root, {**env, **out}, out.get("MASTER_ADDR"))
        notes += nic_result.notes
        found_nics = nic_result.as_env()
    except (PrimusError, ImportError, OSError) as exc:
        _step_failed("nics", exc, failures)
        found_nics = {}
    for name, value in found_nics.items():
        if name not in env:
            out[name] = value
            where[name] = "detected"
    if notes:   # detection notes always reach the launch output (stderr, WARN)
        from primus_runner import log

        for note in notes:
            log.warn(f"detection: {note}")
    out["PRIMUS_DETECTION_DONE"] = "1"
    # Values the launcher defaulted or detected (not the user's): the layers
    # may refine these, e.g. GPUS_PER_NODE = logical NeuronCores.
    out["PRIMUS_DETECTED_VARS"] = " ".join(sorted(n for n in out if n not in env and n not in BOOKKEEPING))
    return out


def _parse(argv: list[str]) -> dict[str, str]:
    import argparse

    p = argparse.ArgumentParser(
        prog="python3 -m primus_runner detect",
        description="Detect what a launch on this host would use: MASTER_ADDR, MASTER_PORT, "
                    "NNODES, NODE_RANK, GPUS_PER_NODE, the accelerator, GPU model and count, "
                    "Neuron instance facts and the NIC/HCA variables. The same code as the "
                    "launcher and base_env.sh; exported values are kept.")
    p.add_argument("--format", choices=("shell", "json", "nul"), default="shell",
                   help="shell: export lines for bash (default); json; nul: records for base_env.sh")
    p.add_argument("--config", help="config file (above ~/.primus.yaml and runner/.primus.yaml)")
    p.add_argument("--accelerator", choices=ACCELERATORS, help="override detection (PRIMUS_ACCELERATOR)")
    p.add_argument("--sysfs-root", default=os.environ.get("PRIMUS_SYSFS_ROOT") or "/",
                   help="root holding sys/, proc/ and etc/ (default: $PRIMUS_SYSFS_ROOT or /)")
    p.add_argument("--dev-root", default=os.environ.get("PRIMUS_DEV_ROOT") or "/",
                   help="root holding dev/ (default: $PRIMUS_DEV_ROOT or /)")
    args = p.parse_args(argv)
    return {"format": args.format, "config": args.config or "", "accelerator": args.accelerator or "",
            "sysfs_root": args.sysfs_root, "dev_root": args.dev_root}


def _fast_parse(argv: list[str]) -> dict[str, str] | None:
    """base_env.sh's exact call without argparse (~10 ms); None for anything else."""
    if argv != ["--format", "nul"]:
        return None
    return {"format": "nul", "config": "", "accelerator": "",
            "sysfs_root": os.environ.get("PRIMUS_SYSFS_ROOT") or "/",
            "dev_root": os.environ.get("PRIMUS_DEV_ROOT") or "/"}


def main(argv: list[str]) -> int:
    opts = _fast_parse(argv) or _parse(argv)
    for flag, path in (("--sysfs-root", opts["sysfs_root"]), ("--dev-root", opts["dev_root"])):
        if not os.path.isdir(path):
            raise UsageError(f"{flag} '{path}' is not a directory; accepted: a directory (default /)")
    failures: list[tuple[str, str, int]] = []
    origins: dict[str, str] = {}
    try:
        cfg = cfgmod.load(opts["config"] or None)
    except PrimusError as exc:
        if opts["format"] != "nul":
            raise
        failures.append(("config", str(exc), exc.exit_code))
        cfg = cfgmod.Config({}, {}, [])
    accelerator = None if opts["accelerator"] in ("", "auto") else opts["accelerator"]
    values = detected_env(os.environ, cfg, accelerator, opts["sysfs_root"], opts["dev_root"],
                          origins, failures)
    if opts["format"] == "nul":
        records = [("env", name, value) for name, value in values.items()]
        records += [("origin", name, origin) for name, origin in origins.items()]
        records += [("fail", step, reason) for step, reason, _ in failures]
        records.append(("end", "", ""))
        sys.stdout.flush()
        sys.stdout.buffer.write(nul_records(records))
        sys.stdout.buffer.flush()
        return 0
    from primus_runner import log

    for step, reason, _ in failures:
        for line in reason.splitlines() or [""]:
            log.error(f"detect: {step}: {line}")
    if opts["format"] == "json":
        import json

        print(json.dumps({"env": values, "origins": origins,
                          "failures": [{"step": s, "reason": r} for s, r, _ in failures]}, indent=2))
    else:
        from primus_runner.shellfmt import export_lines

        sys.stdout.write(export_lines(values))
    return max((code for _, _, code in failures), default=0)
