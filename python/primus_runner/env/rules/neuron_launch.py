"""Neuron launch rules: where the runtime reference meets AWS practice and the
frameworks (multi-node bootstrap, EFA, core partitioning, topology, host limits).

The one owner of these checks: the Neuron layer (runner/helpers/envs/neuron.sh)
only sets values, and ``env check`` and ``primus-cli direct`` both run these
rules, so both give the same verdict and message.

Sources (also in README, section Neuron):
- PyTorch/XLA Neuron PJRT set-up, torch_xla/_internal/neuron.py and
  neuron_utils.py (https://github.com/pytorch/xla): under torchrun without
  XLA_USE_SPMD=1 each process gets one core: NEURON_RT_VISIBLE_CORES unset ->
  LOCAL_RANK; set -> remapped to entry LOCAL_RANK, and ``LOCAL_WORLD_SIZE ... is
  not equal to count`` is raised unless the list holds exactly LOCAL_WORLD_SIZE
  cores (one core with LOCAL_WORLD_SIZE 1 passes).
- EFA: https://awsdocs-neuron.readthedocs-hosted.com/en/v2.29.1/_sources/frameworks/torch/torch-neuronx/setup-trn1-multi-node-execution.rst
- Trn1 topology: nrt_load_collectives "Unsupported topology. Supported number of
  Neuron Cores is 1, 2, 8, 16 or a multiple of 32"
  (https://github.com/huggingface/optimum-neuron/issues/619).
- LNC compiler/runtime agreement:
  https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-features/logical-neuroncore-config.html
- ulimit -n 65535 and a reserved root-comm port (sysctl ip_local_reserved_ports):
  https://github.com/aws-neuron/aws-neuron-samples/blob/master/torch-neuronx/training/aws-batch/llama2/docker/llama_batch_training.sh
- XLA_USE_BF16 / XLA_DOWNCAST_BF16: "Neuron Release 2.24 will be the last release
  to support" them,
  https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/announcements/neuron2.x/announce-eos-bf16-vars.html
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from primus_runner.env.rules import distributed
from primus_runner.env.rules.engine import _State, rule
from primus_runner.env.rules.types import Finding, parse_uint
from primus_runner.grammar import is_loopback, split_hostport
from primus_runner.hardware.neuron_cores import visible_cores

_CC_LNC = re.compile(r"(?:^|\s)(?:--lnc|--logical-nc-config|-lnc)(?:=|\s+)(\S+)")
OPEN_FILES_MIN = 65535          # AWS launch scripts: ulimit -n 65535
OPEN_FILES_PROCS = 8


def _neuron(s: _State) -> bool:
    """The launch targets Neuron (or, with accelerator auto, the instance is known)."""
    return s.accel == "neuron" or (s.accel == "auto" and s.family is not None)


def _nnodes(s: _State) -> int:
    return s.uint("NNODES") or 1


def _per_proc(s: _State) -> int:
    k = s.uint("PRIMUS_NEURON_CORES_PER_PROC")
    return k if k else 1


def _procs(s: _State) -> int | None:
    n = s.uint("GPUS_PER_NODE")
    return n if n is not None else s.ctx.gpus_per_node


def _spmd(s: _State) -> bool:
    return s.get("XLA_USE_SPMD") == "1" or s.get("PRIMUS_NEURON_SPMD") == "1"


def _visible(s: _State) -> list[int] | None:
    """The cores NEURON_RT_VISIBLE_CORES names; None when unset or invalid (a
    repeat included: the type rule reports it, never counted as another core)."""
    return visible_cores(s.get("NEURON_RT_VISIBLE_CORES"))


# --------------------------------------------------------------------------- multi-node
@rule("neuron_root_comm")
def _root_comm(s: _State) -> Iterator[Finding]:
    name = "NEURON_RT_ROOT_COMM_ID"
    nnodes = _nnodes(s)
    value = s.get(name)
    derive = ("unset it: on multi-node jobs the Neuron layer derives MASTER_ADDR:PORT with "
              "PORT = PRIMUS_NEURON_ROOT_COMM_PORT, else MASTER_PORT+1")
    if value is None:
        if _neuron(s) and nnodes > 1:
            yield s.found("error", name,
                          f"is unset with NNODES={nnodes}: the Neuron runtime needs rank 0's "
                          "host:port to bootstrap multi-node collectives",
                          "export MASTER_ADDR and MASTER_PORT (the Neuron layer derives it), or "
                          f"{name}=<rank-0 host>:<free port>", "")
        return
    parts = split_hostport(value)
    if parts is None or not parts[1].isdigit():
        return  # the type rule reports a value that is not host:port
    host, port_text, bracketed = parts
    port = int(port_text)
    if ":" in host and not bracketed:
        yield s.found("error", name,
                      "has an IPv6 host without brackets, so the runtime cannot tell the host "
                      "from the port",
                      f"write it as [{host}]:{port}, or {derive}")
    if not 1024 <= port <= 65535:
        yield s.found("error", name,
                      f"has port {port}; accepted: 1024-65535 (ports below 1024 need root to "
                      "bind on the rank-0 node)",
                      f"pick a free port from 1024 to 65535 (PRIMUS_NEURON_ROOT_COMM_PORT), or {derive}")
    master = s.uint("MASTER_PORT")
    if master is not None and port == master:
        yield s.found("error", name,
                      f"uses port {port}, which is MASTER_PORT: the torch rendezvous store "
                      "already binds it on node 0, so the collectives bootstrap cannot",
                      f"pick another port (PRIMUS_NEURON_ROOT_COMM_PORT), or {derive}")
    if nnodes > 1 and is_loopback(host):
        yield s.found("error", name,
                      f"names the loopback host {host!r} with NNODES={nnodes}: every node would "
                      "connect to itself and the collectives bootstrap never completes",
                      f"use the address of the rank-0 node reachable from every node, or {derive} "
                      "from a non-loopback MASTER_ADDR")


@rule("neuron_root_comm_port_reserved")
def _port_reserved(s: _State) -> Iterator[Finding]:
    value = s.get("NEURON_RT_ROOT_COMM_ID")
    if not _neuron(s) or _nnodes(s) <= 1 or value is None:
        return
    parts = split_hostport(value)
    if parts is None or not parts[1].isdigit():
        return
    port = int(parts[1])
    root = s.env.get("PRIMUS_SYSFS_ROOT") or "/"
    local = distributed.ephemeral_range(root)
    if local is None:
        return
    low, high = local
    if not low <= port <= high:
        return
    reserved = distributed.reserved_ports(root)
    if reserved is not None and port not in reserved:
        yield s.found("warning", "NEURON_RT_ROOT_COMM_ID",
                      f"port {port} lies in the ephemeral range net.ipv4.ip_local_port_range "
                      f"({low}-{high}) and is not in net.ipv4.ip_local_reserved_ports, so an "
                      "outgoing connection on the rank-0 node can take it before the bootstrap "
                      "binds it",
                      f"reserve it on every node (sudo sysctl -w net.ipv4.ip_local_reserved_ports="
                      f"{port}, as AWS's launch scripts do), or pick a port outside {low}-{high}")


@rule("neuron_efa_multinode")
def _efa(s: _State) -> Iterator[Finding]:
    nnodes = _nnodes(s)
    if not _neuron(s) or nnodes <= 1:
        return
    instance = (s.ctx.neuron_instance_type or "").strip().lower()
    expected = s.reg.neuron.get("efa_devices_per_instance", {}).get(instance)
    found = s.get("PRIMUS_NEURON_EFA_DEVICES")
    fix_type = "run multi-node jobs on trn1.32xlarge or trn1n.32xlarge (EFA-enabled sizes), or set NNODES=1"
    if expected == 0:
        yield s.found("error", "NNODES",
                      f"is {nnodes} on {instance}, which has no EFA: AWS documents that EFA is "
                      "not available on the smaller Trn1 sizes and that they cannot run "
                      "multi-node jobs", fix_type)
    elif found == "0":
        yield s.found("error", "PRIMUS_NEURON_EFA_DEVICES",
                      f"is 0: no EFA device (sys/class/infiniband/* bound to the efa driver) was "
                      f"found on this {instance or 'Neuron'} host, but NNODES={nnodes} needs EFA "
                      "for the collectives between instances",
                      "launch the instances with their EFA interfaces and the EFA driver "
                      "(efa_installer) in a security group that allows EFA traffic, or set NNODES=1")


# --------------------------------------------------------------------------- cores
@rule("neuron_cores_per_proc_spmd")
def _cores_per_proc(s: _State) -> Iterator[Finding]:
    k = s.uint("PRIMUS_NEURON_CORES_PER_PROC")
    if k is None or k <= 1 or _spmd(s):
        return
    n = _procs(s)
    raises = (f"raises 'LOCAL_WORLD_SIZE {n} ... is not equal to count {k}'" if n and n != k
              else "remaps the process to one of them")
    yield s.found("error", "PRIMUS_NEURON_CORES_PER_PROC",
                  f"gives each process {k} NeuronCores, but without XLA_USE_SPMD=1 PyTorch/XLA's "
                  "Neuron set-up under torchrun gives every process exactly one core: it reads "
                  "NEURON_RT_VISIBLE_CORES as a node-wide list of LOCAL_WORLD_SIZE cores, so a "
                  f"per-process list of {k} cores {raises}",
                  "drop --neuron-cores-per-proc (one core per process), or declare a workload that "
                  "owns several cores per process with XLA_USE_SPMD=1 (GSPMD) or PRIMUS_NEURON_SPMD=1")


@rule("neuron_cores_fit")
def _cores_fit(s: _State) -> Iterator[Finding]:
    if not _neuron(s):
        return
    total = s.instance_cores()
    num = s.uint("NEURON_RT_NUM_CORES")
    if num is not None and total is not None and num > total:
        yield s.found("error", "NEURON_RT_NUM_CORES",
                      f"asks for {num} NeuronCores (the node total, as AWS samples use it) but "
                      f"this {s.ctx.neuron_instance_type or 'instance'} has {total} logical cores",
                      f"use at most {total}, or unset it (deprecated: prefer NEURON_RT_VISIBLE_CORES)")
    visible = _visible(s)
    available = len(visible) if visible is not None else total
    n, k = _procs(s), _per_proc(s)
    if available is None or n is None or n * k <= available:
        return
    where = (f"NEURON_RT_VISIBLE_CORES={s.get('NEURON_RT_VISIBLE_CORES')}" if visible is not None
             else f"the logical cores of {s.ctx.neuron_instance_type or 'this instance'}")
    yield s.found("error", "GPUS_PER_NODE",
                  f"is {n} processes x {k} NeuronCore(s) each = {n * k}, but only {available} are "
                  f"available ({where})",
                  f"export GPUS_PER_NODE={max(available // k, 1)} (or unset it), or give fewer "
                  "cores per process")


@rule("neuron_visible_cores_count")
def _visible_count(s: _State) -> Iterator[Finding]:
    visible = _visible(s)
    n = _procs(s)
    if not _neuron(s) or visible is None or n is None or _per_proc(s) > 1 or _spmd(s):
        return
    if len(visible) == n or (n == 1 and len(visible) <= 1):
        return
    yield s.found("error", "NEURON_RT_VISIBLE_CORES",
                  f"lists {len(visible)} cores for GPUS_PER_NODE={n} processes: PyTorch/XLA gives "
                  "process LOCAL_RANK entry LOCAL_RANK of this node-wide list and raises "
                  f"'LOCAL_WORLD_SIZE {n} ... is not equal to count {len(visible)}' unless the list "
                  "holds exactly one core per process",
                  f"list exactly {n} cores, or unset GPUS_PER_NODE so the Neuron layer uses "
                  f"{len(visible)} processes")


def _nearest_trn1(count: int, valid: list[int], multiple: int) -> tuple[int | None, int]:
    lower = max([v for v in valid if v < count] + [m for m in range(multiple, count, multiple)],
                default=None)
    upper = next(v for v in [*valid, *range(multiple, count + 2 * multiple, multiple)] if v > count)
    return lower, upper


@rule("trn1_collective_topology")
def _trn1_topology(s: _State) -> Iterator[Finding]:
    if s.family != "trn1" or not _neuron(s):
        return
    n = _procs(s)
    if n is None or n < 1:
        return
    k = _per_proc(s)
    count = n * k
    valid = list(s.reg.neuron.get("trn1_collective_cores", ()))
    multiple = int(s.reg.neuron.get("trn1_collective_multiple", 32))
    if not valid or count in valid or count % multiple == 0:
        return
    lower, upper = _nearest_trn1(count, valid, multiple)
    nearest = f"{lower} or {upper}" if lower else str(upper)
    per = f" x {k} cores per process" if k > 1 else ""
    yield s.found("error", "GPUS_PER_NODE",
                  f"gives {count} NeuronCores per node ({n} processes{per}); Trn1 collectives "
                  f"accept 1, 2, 8, 16 or a multiple of {multiple} cores per node and fail with "
                  "'Unsupported topology' otherwise",
                  f"use {nearest} cores per node (for example export GPUS_PER_NODE="
                  f"{max((lower or upper) // k, 1)}); other counts need inf2 instances")


# --------------------------------------------------------------------------- host limits
def open_files_limit() -> int | None:
    """The soft RLIMIT_NOFILE of this process (the launch inherits it); None: unlimited."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


@rule("neuron_open_files")
def _open_files(s: _State) -> Iterator[Finding]:
    n = _procs(s)
    if not _neuron(s) or n is None or n < OPEN_FILES_PROCS:
        return
    limit = open_files_limit()
    if limit is not None and limit < OPEN_FILES_MIN:
        yield s.found("warning", "GPUS_PER_NODE",
                      f"starts {n} processes per node with an open-files limit (ulimit -n) of "
                      f"{limit}: Neuron runtime, EFA and data loaders hold many descriptors per "
                      "process and runs fail with 'Too many open files'",
                      f"raise it before launching: ulimit -n {OPEN_FILES_MIN} (AWS launch scripts "
                      "do), or a nofile limit in /etc/security/limits.conf")


# --------------------------------------------------------------------------- barrier, framework
@rule("hw_barrier_trn1")
def _hw_barrier_trn1(s: _State) -> Iterator[Finding]:
    if s.family == "trn1" and s.flag("NEURON_RT_ENABLE_HW_EXECUTION_BARRIER") is True:
        yield s.found("warning", "NEURON_RT_ENABLE_HW_EXECUTION_BARRIER",
                      "turns the hardware execution barrier on on Trn1, where the runtime leaves "
                      "it off because of a suspected deadlock with the barrier's traffic pattern",
                      "unset NEURON_RT_ENABLE_HW_EXECUTION_BARRIER on Trn1 (and keep "
                      "NEURON_RT_RANKS_PER_NETWORK_PROXY=1, which does not need it)")


@rule("xla_bf16_removed")
def _xla_bf16(s: _State) -> Iterator[Finding]:
    for name in ("XLA_USE_BF16", "XLA_DOWNCAST_BF16"):
        if s.get(name) == "1":
            yield s.found("warning", name,
                          "was last supported in Neuron 2.24 (torch-xla removes it in 2.8); "
                          "current releases ignore it, so the model runs in the precision the "
                          "code sets",
                          f"unset {name}; use automatic mixed precision or model.to(torch.bfloat16)")


def compiler_lnc(flags: str) -> str | None:
    """The logical core size NEURON_CC_FLAGS asks the compiler for (last one wins)."""
    found = _CC_LNC.findall(flags)
    return found[-1] if found else None


@rule("neuron_compiler_lnc")
def _compiler_lnc(s: _State) -> Iterator[Finding]:
    flags = s.get("NEURON_CC_FLAGS")
    if flags is None:
        return
    text = compiler_lnc(flags)
    if text is None:
        return
    size = parse_uint(text)
    lnc, _ = s.lnc()
    if size is None:
        yield s.found("error", "NEURON_CC_FLAGS",
                      f"gives the compiler logical core size {text!r}, which is not a whole number",
                      "use --lnc=1 or --lnc=2 (the runtime's NEURON_LOGICAL_NC_CONFIG)")
    elif lnc is not None and size != lnc:
        yield s.found("error", "NEURON_CC_FLAGS",
                      f"compiles for logical core size {size} but the runtime runs with LNC {lnc} "
                      "(NEURON_LOGICAL_NC_CONFIG, set or the instance default); AWS Neuron does "
                      "not support a compiler LNC that differs from the runtime's",
                      f"use --lnc={lnc} in NEURON_CC_FLAGS, or export NEURON_LOGICAL_NC_CONFIG={size} "
                      "where that size exists")
