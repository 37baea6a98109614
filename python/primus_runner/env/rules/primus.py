"""Rules for the launcher, RCCL/NCCL, ROCm, TE, hipBLASLt and JAX/XLA variables
(Primus reference)."""
from __future__ import annotations

import os
import re
from collections.abc import Iterator

from primus_runner.env.rules import distributed
from primus_runner.env.rules.engine import _State, rule
from primus_runner.env.rules.types import (
    Finding,
    parse_uint,
)


# --------------------------------------------------------------------------- Primus rules
@rule("master_port_range")
def _master_port(s: _State) -> Iterator[Finding]:
    value = s.get("MASTER_PORT")
    found = distributed.problem("MASTER_PORT", value) if value is not None else None
    if found is not None:
        yield s.found("error", "MASTER_PORT", *found)


@rule("master_port_ephemeral")
def _master_port_ephemeral(s: _State) -> Iterator[Finding]:
    # The same host file the launch's port picker avoids (rendezvous.free_port).
    port = s.uint("MASTER_PORT")
    nnodes = s.uint("NNODES") or 1
    if port is None or (s.get("RUN_MODE") == "single" and nnodes <= 1):
        return  # single mode on one node: no rendezvous store binds it
    found = distributed.ephemeral_problem(port, s.env.get("PRIMUS_SYSFS_ROOT") or "/")
    if found is not None:
        yield s.found("warning", "MASTER_PORT", *found)


def _launcher_set(s: _State, name: str) -> bool:
    """True when the launcher or a base_env default, not the user, set ``name``."""
    if f" {name} " in f" {s.env.get('PRIMUS_DETECTED_VARS', '')} ":
        return True
    for entry in s.env.get("PRIMUS_ENV_ORIGINS", "").split():
        key, _, origin = entry.partition(":")
        if key == name:
            return origin in ("default", "config", "detected", "launcher")
    return False


@rule("master_addr_multinode")
def _master_addr(s: _State) -> Iterator[Finding]:
    nnodes = s.uint("NNODES")
    addr = s.get("MASTER_ADDR")
    if nnodes is None or addr is None:
        return
    found = distributed.loopback_problem(addr, nnodes, users=not _launcher_set(s, "MASTER_ADDR"))
    if found is not None:
        yield s.found(*found[:1], "MASTER_ADDR", *found[1:])


@rule("jax_coordinator_single_node")
def _jax_single(s: _State) -> Iterator[Finding]:
    # Reference section 14: JAX_COORDINATOR_IP / JAX_COORDINATOR_PORT are set by
    # "env_spec.py when NNODES > 1"; the IP is "Left unset on single-node runs so
    # MaxText uses the local single-controller path". Across nodes the cluster
    # check compares both (cluster-uniform; set on one node only is a mismatch).
    nnodes = s.uint("NNODES")
    if nnodes is None or nnodes > 1:
        return
    for name in ("JAX_COORDINATOR_IP", "JAX_COORDINATOR_PORT"):
        if s.get(name) is not None:
            yield s.found("warning", name,
                          "is set for a single-node run: Primus sets the JAX coordinator only when "
                          "NNODES > 1 and leaves it unset here so MaxText takes its local "
                          "single-controller path; set, it starts the distributed one",
                          "unset JAX_COORDINATOR_IP and JAX_COORDINATOR_PORT for one node")


@rule("jax_coordinator_port_clash")
def _jax_port_clash(s: _State) -> Iterator[Finding]:
    # In run mode torchrun, torchrun's TCP store listens on MASTER_PORT (and may
    # take MASTER_PORT+1); a JAX coordinator on either port collides
    # with it (seen: a segfault on one node and a 65 s hang on the other). The
    # launcher exports RUN_MODE with the mode it chose; by hand, unset, no finding.
    if s.get("RUN_MODE") != "torchrun":
        return
    master = s.uint("MASTER_PORT")
    if master is None:
        return
    taken = {master: "MASTER_PORT", master + 1: "MASTER_PORT+1"}
    candidates = [("JAX_COORDINATOR_PORT", s.get("JAX_COORDINATOR_PORT"))]
    address = s.get("JAX_COORDINATOR_ADDRESS")
    if address and ":" in address:
        candidates.append(("JAX_COORDINATOR_ADDRESS", address.rsplit(":", 1)[1]))
    for name, text in candidates:
        port = parse_uint(text) if text else None
        if port in taken:
            yield s.found("error", name,
                          f"puts the JAX coordinator on port {port} = {taken[port]} in run mode "
                          f"torchrun, where torchrun's rendezvous store already listens "
                          f"(MASTER_PORT={master}); jax.distributed.initialize() then crashes or hangs",
                          "run JAX one process per node (--single, direct.run_mode: single, or a hook's "
                          "env.RUN_MODE=single: the launcher then sets JAX_COORDINATOR_* itself), or "
                          f"give the coordinator another port, e.g. JAX_COORDINATOR_PORT={master + 2}")


@rule("dump_hlo_dir_without_dump")
def _dump_dir(s: _State) -> Iterator[Finding]:
    if s.get("DUMP_HLO_DIR") is not None and s.get("DUMP_HLO") != "1":
        yield s.found("info", "DUMP_HLO_DIR", "has no effect unless DUMP_HLO=1",
                      "export DUMP_HLO=1 to dump HLO there")


@rule("rank_bounds")
def _rank_bounds(s: _State) -> Iterator[Finding]:
    for rank, size in (("NODE_RANK", "NNODES"), ("RANK", "WORLD_SIZE"),
                       ("LOCAL_RANK", "LOCAL_WORLD_SIZE")):
        index, count = s.uint(rank), s.uint(size)
        if index is None or count is None:
            continue
        found = distributed.rank_problem(rank, index, size, count)
        if found is not None:
            yield s.found("error", rank, *found)


@rule("nccl_proto_values")
def _nccl_proto(s: _State) -> Iterator[Finding]:
    value = s.get("NCCL_PROTO")
    if value is None:
        return
    body = value[1:] if value.startswith("^") else value
    known = {"simple", "ll", "ll128"}
    bad = [item for item in body.split(",") if item.strip().lower() not in known]
    if bad:
        yield s.found("error", "NCCL_PROTO",
                      f"names unknown protocol(s) {', '.join(repr(b) for b in bad)}; RCCL knows "
                      f"Simple, LL and LL128 (comma-separated, ^ to exclude)",
                      "set NCCL_PROTO to e.g. Simple,LL128 or ^LL, or unset it to let RCCL choose")


@rule("primus_patches_syntax")
def _patches(s: _State) -> Iterator[Finding]:
    value = s.env.get("PRIMUS_PATCHES")
    if not value or value in ("all", "none"):
        return
    items = value.split(",")
    fix = 'set PRIMUS_PATCHES to "all", "none" or names separated by commas only (a,b)'
    if any(item == "" for item in items):
        yield s.found("warning", "PRIMUS_PATCHES",
                      "has an empty item (doubled, leading or trailing comma)", fix)
        return
    if len(items) > 1 and ({"all", "none"} & set(items)):
        yield s.found("warning", "PRIMUS_PATCHES",
                      '"all" and "none" are whole values, not list items: inside a list they '
                      "are taken as patch names that do not exist", fix)
        return
    bad = [item for item in items if not re.match(r"[A-Za-z0-9_.-]+\Z", item)]
    if bad:
        yield s.found("warning", "PRIMUS_PATCHES",
                      f"item(s) {', '.join(repr(b) for b in bad)} cannot be patch names "
                      "(spaces or symbols); they match no patch, so those patches do not run", fix)


@rule("hipblaslt_stage_needs_switch")
def _stage_switch(s: _State) -> Iterator[Finding]:
    stage = s.get("PRIMUS_HIPBLASLT_TUNING_STAGE")
    if stage in ("1", "2", "3") and s.get("PRIMUS_HIPBLASLT_TUNING") != "1":
        yield s.found("warning", "PRIMUS_HIPBLASLT_TUNING_STAGE",
                      "has no effect: the tuning flow runs only when PRIMUS_HIPBLASLT_TUNING=1 "
                      f"(it is {s.env.get('PRIMUS_HIPBLASLT_TUNING', 'unset')!r})",
                      "export PRIMUS_HIPBLASLT_TUNING=1, or unset PRIMUS_HIPBLASLT_TUNING_STAGE")


@rule("hipblaslt_stage3_override_file")
def _stage3_file(s: _State) -> Iterator[Finding]:
    if s.get("PRIMUS_HIPBLASLT_TUNING") != "1" or s.get("PRIMUS_HIPBLASLT_TUNING_STAGE") != "3":
        return
    path = s.get("HIPBLASLT_TUNING_OVERRIDE_FILE")
    if path is None:
        yield s.found("error", "HIPBLASLT_TUNING_OVERRIDE_FILE",
                      "is unset, but stage 3 (PRIMUS_HIPBLASLT_TUNING_STAGE=3) applies the tuned "
                      "kernels from that file",
                      "export HIPBLASLT_TUNING_OVERRIDE_FILE=<file written by stage 2>", "")
    elif s.ctx.container:
        yield s.found("info", "HIPBLASLT_TUNING_OVERRIDE_FILE",
                      "cannot be checked from the host: it is read inside the container",
                      "make sure the file is mounted into the container at that path")
    elif not os.path.isfile(path):
        yield s.found("error", "HIPBLASLT_TUNING_OVERRIDE_FILE",
                      "does not name an existing file; stage 3 needs the tuned-kernel file",
                      "point it at the file stage 2 wrote (on storage every node sees)")


@rule("hipblaslt_vs_deterministic")
def _tuning_deterministic(s: _State) -> Iterator[Finding]:
    if s.get("PRIMUS_HIPBLASLT_TUNING") == "1" and s.get("PRIMUS_DETERMINISTIC") == "1":
        yield s.found("error", "PRIMUS_HIPBLASLT_TUNING",
                      "hipBLASLt tuning and deterministic mode (PRIMUS_DETERMINISTIC=1) exclude "
                      "each other",
                      "unset one: PRIMUS_HIPBLASLT_TUNING=0 or PRIMUS_DETERMINISTIC=0")


@rule("te_tuning_vs_deterministic")
def _te_tuning_deterministic(s: _State) -> Iterator[Finding]:
    value = s.get("TE_HIPBLASLT_TUNING")
    if value not in (None, "0") and s.get("PRIMUS_DETERMINISTIC") == "1":
        yield s.found("warning", "TE_HIPBLASLT_TUNING",
                      "TE hipBLASLt tuning conflicts with deterministic mode "
                      "(PRIMUS_DETERMINISTIC=1); the tuning hook disables conflicting modes",
                      "unset TE_HIPBLASLT_TUNING for deterministic runs")


@rule("te_algo_selection_container")
def _te_algo_container(s: _State) -> Iterator[Finding]:
    value = s.get("TE_HIPBLASLT_ALGO_SELECTION")
    if value is not None and s.ctx.container:
        yield s.found("warning", "TE_HIPBLASLT_ALGO_SELECTION",
                      "is not forwarded into the container: the allowlist covers HIPBLASLT_* "
                      "names, not TE_*, so the job would silently use the first solution",
                      f"pass it explicitly: --env TE_HIPBLASLT_ALGO_SELECTION={value}")


@rule("hip_visible_devices_vs_gpus")
def _hip_visible(s: _State) -> Iterator[Finding]:
    value = s.get("HIP_VISIBLE_DEVICES")
    if value is None:
        return
    items = value.split(",")
    if any(not item.strip() for item in items):
        yield s.found("error", "HIP_VISIBLE_DEVICES",
                      "has an empty item; ROCm stops parsing the list there",
                      "write the GPU indices separated by single commas, e.g. 0,1,2,3")
        return
    if len(set(items)) != len(items):
        yield s.found("error", "HIP_VISIBLE_DEVICES",
                      "names a GPU twice; two ranks would share one GPU",
                      "list each GPU index once")
        return
    gpus = s.uint("GPUS_PER_NODE") or s.ctx.gpus_per_node
    if gpus is None:
        return
    if len(items) < gpus:
        yield s.found("error", "HIP_VISIBLE_DEVICES",
                      f"exposes {len(items)} GPU(s) but GPUS_PER_NODE={gpus} processes start on "
                      f"this node; local ranks {len(items)}..{gpus - 1} would find no GPU",
                      f"list {gpus} GPUs (e.g. {','.join(str(i) for i in range(gpus))}) or set "
                      f"GPUS_PER_NODE={len(items)}")
    elif len(items) > gpus:
        yield s.found("info", "HIP_VISIBLE_DEVICES",
                      f"exposes {len(items)} GPUs but only GPUS_PER_NODE={gpus} are used",
                      "list only the GPUs the job should use")


_AUTOTUNE_WHY = ("at 0 XLA picks a default fp8 GEMM kernel that overflows on fine-grained MoE "
                 "expert einsums, giving NaN loss on fp8 runs")


def _last_flag(words: list[str], flag: str) -> str | None:
    """The value of the last ``flag=value`` word (XLA keeps the last occurrence)."""
    found = None
    for word in words:
        name, sep, value = word.partition("=")
        if sep and name == flag:
            found = value
    return found


@rule("xla_autotune_level_min")
def _autotune(s: _State) -> Iterator[Finding]:
    # Reference section 14: XLA_GPU_AUTOTUNE_LEVEL "Must be >= 1"; XLA_FLAGS_APPEND is
    # "Appended onto XLA_FLAGS as the final layer, so it overrides any single managed flag".
    level = s.uint("XLA_GPU_AUTOTUNE_LEVEL")
    if level == 0:
        yield s.found("error", "XLA_GPU_AUTOTUNE_LEVEL", f"must be >= 1: {_AUTOTUNE_WHY}",
                      "unset XLA_GPU_AUTOTUNE_LEVEL (default 4) or set it to 1-4")
    words = _xla_words(s.get("XLA_FLAGS_APPEND") or "") or []
    appended = _last_flag(words, "--xla_gpu_autotune_level")
    if appended is not None and parse_uint(appended) == 0:
        yield s.found("error", "XLA_FLAGS_APPEND",
                      "sets --xla_gpu_autotune_level=0, which is appended last and so overrides the "
                      f"managed level (XLA_GPU_AUTOTUNE_LEVEL must be >= 1): {_AUTOTUNE_WHY}",
                      "drop --xla_gpu_autotune_level=0 from XLA_FLAGS_APPEND (the managed level is "
                      "XLA_GPU_AUTOTUNE_LEVEL, default 4) or give it 1-4")


def _xla_words(value: str) -> list[str] | None:
    if not value.strip():
        return []  # no shlex import for the common case (it costs ms of every check)
    import shlex

    try:
        return shlex.split(value)
    except ValueError:
        return None


@rule("xla_flags_syntax")
def _xla_syntax(s: _State) -> Iterator[Finding]:
    for name in ("XLA_FLAGS", "XLA_FLAGS_APPEND"):
        value = s.get(name)
        if value is None:
            continue
        words = _xla_words(value)
        if words is None:
            yield s.found("error", name, "has an unbalanced quote; XLA cannot split it into flags",
                          "balance the quotes, e.g. --xla_gpu_enable_command_buffer=''")
            continue
        bad = [w for w in words if not w.startswith("--")]
        if bad:
            yield s.found("error", name,
                          f"word(s) {', '.join(repr(b) for b in bad[:3])} are not --flags; XLA "
                          "aborts at start-up on what it cannot parse",
                          "separate flags by spaces and write each as --name=value")


@rule("xla_flags_overridden")
def _xla_overridden(s: _State) -> Iterator[Finding]:
    value = s.get("XLA_FLAGS")
    words = _xla_words(value) if value is not None else None
    if not words:
        return
    managed = {}
    for item in s.reg.managed_xla_flags:
        flag_value = item["value"]
        if item.get("parameter") and s.get(item["parameter"]):
            flag_value = s.env[item["parameter"]]
        managed[item["flag"]] = flag_value.strip("'")
    for word in words:
        flag, _, user = word.partition("=")
        if flag in managed and user != managed[flag]:
            yield s.found("warning", "XLA_FLAGS",
                          f"sets {flag}={user}, but Primus appends its managed {flag}="
                          f"{managed[flag] or repr('')} after the inherited XLA_FLAGS and XLA "
                          "keeps the last occurrence, so your value is overridden",
                          f"move it to XLA_FLAGS_APPEND='{flag}={user}' (applied last)")


@rule("xla_dump_by_hand")
def _xla_dump(s: _State) -> Iterator[Finding]:
    for name in ("XLA_FLAGS", "XLA_FLAGS_APPEND"):
        value = s.get(name)
        if value is not None and "--xla_dump_to" in value:
            yield s.found("info", name, "adds --xla_dump_to by hand",
                          "prefer DUMP_HLO=1 (and DUMP_HLO_DIR) which manage --xla_dump_to")


@rule("skip_validation")
def _skip_validation(s: _State) -> Iterator[Finding]:
    if s.get("PRIMUS_SKIP_VALIDATION") == "1":
        yield s.found("warning", "PRIMUS_SKIP_VALIDATION",
                      "validation is switched off: the launcher starts even when this check "
                      "finds errors, which then surface late on the cluster",
                      "unset PRIMUS_SKIP_VALIDATION (or set 0) and fix the findings instead")


# --------------------------------------------------------------------------- this host
def _host_root(s: _State) -> str | None:
    """The sysfs root user values are checked against; None inside a container
    launch (the values are for the container's view, checked there)."""
    if s.ctx.container:
        return None
    root = s.env.get("PRIMUS_SYSFS_ROOT") or "/"
    return root if os.path.isdir(root) else None


@rule("nic_values_on_host")
def _nic_values_on_host(s: _State) -> Iterator[Finding]:
    root = _host_root(s)
    if root is None:
        return
    from primus_runner.network.check import host_problems, user_values

    if not user_values(s.env):
        return
    for problem in host_problems(s.env, root):
        yield s.found(problem.severity, problem.variable, problem.message, problem.fix,
                      problem.value)


@rule("gpu_masks_on_host")
def _gpu_masks_on_host(s: _State) -> Iterator[Finding]:
    names = ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
    root = _host_root(s)
    if root is None or s.accel not in ("rocm", "cuda") or not any(s.get(n) for n in names):
        return
    from primus_runner.hardware import devices, placement

    if s.accel == "rocm":
        physical = len(devices.amd_gpus_kfd(root) or devices.amd_gpus_drm(root))
    else:
        physical = int(s.env.get("PRIMUS_GPU_COUNT", "0") or 0) if not s.get(
            "CUDA_VISIBLE_DEVICES") else 0
    if physical == 0:
        return
    for name, why, fix in placement.gpu_mask(s.env, physical, s.accel).problems:
        yield s.found("error", name, why, fix)
