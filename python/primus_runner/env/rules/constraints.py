"""Rules for constraints the two references state on single values or pairs:
NCCL_PXN_DISABLE, NCCL_ALGO, NEURON_RT_MAP_HBM,
NEURON_RT_DBG_DUMP_INPUTS_ON_ERR, NEURON_RT_NUM_CORES with
NEURON_RT_VISIBLE_CORES, DATABRICKS_TOKEN without DATABRICKS_HOST.

Each rule quotes the reference line it enforces. This module owns only these
verdicts; value syntax comes from python/primus_runner/grammar.py, hardware
facts from the registry (through ``_State``). It reads no file.
"""
from __future__ import annotations

from collections.abc import Iterator

from primus_runner.env.rules.engine import _State, rule
from primus_runner.env.rules.types import Finding
from primus_runner.grammar import index_list

# NCCL's algorithm and collective names, matched case-insensitively by parseList
# (src/graph/tuning.cc): ncclAlgoStr = { "Tree", "Ring", "CollNetDirect",
# "CollNetChain", "NVLS", "NVLSTree", "PAT" } and ncclFuncStr = { "Broadcast",
# "Reduce", "AllGather", "ReduceScatter", "AllReduce" } (src/enqueue.cc,
# https://github.com/NVIDIA/nccl/blob/master/src/enqueue.cc); documented at
# https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-algo.
# An unknown token makes parseList return ncclInvalidUsage (communicator init fails).
NCCL_ALGORITHMS = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
NCCL_FUNCTIONS = ("Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce")


def nccl_list_problem(value: str, elements: tuple[str, ...]) -> str | None:
    """Why ``value`` is not NCCL's ``[^]a,b;func:[^]c`` list of ``elements``, or None
    (the grammar of parseList in src/graph/tuning.cc)."""
    known = {e.lower() for e in elements}
    functions = {f.lower() for f in NCCL_FUNCTIONS}
    for position, entry in enumerate(value.split(";")):
        if not entry:
            continue
        prefix, sep, body = entry.partition(":")
        if not sep:
            if position:
                return f"entry {entry!r} after ';' needs a collective prefix (allreduce:...)"
            body = prefix
        elif prefix.lower() not in functions:
            return f"names unknown collective {prefix!r}; accepted: {', '.join(NCCL_FUNCTIONS)}"
        body = body[1:] if body.startswith("^") else body
        bad = [item for item in body.split(",") if item and item.lower() not in known]
        if bad:
            return (f"names unknown item(s) {', '.join(repr(b) for b in bad)}; accepted: "
                    f"{', '.join(elements)}")
    return None


@rule("nccl_pxn_disable_values")
def _pxn_disable(s: _State) -> Iterator[Finding]:
    # Reference section 4: "NCCL_PXN_DISABLE  1  base_env.sh  RCCL  Disable PXN
    # (PCIe cross-NIC); set 0 to enable." NCCL tests `ncclPxnDisable(comm) != 1`
    # (src/graph/paths.cc), so any value but 1 leaves PXN on.
    value = s.get("NCCL_PXN_DISABLE")
    if value is None or value in ("0", "1"):
        return
    yield s.found("error", "NCCL_PXN_DISABLE",
                  "is not 0 or 1; RCCL/NCCL disable PXN only when the value is exactly 1, so "
                  "this value silently leaves PXN on",
                  "set NCCL_PXN_DISABLE=1 (PXN off, the launcher default) or 0 (PXN on)")


@rule("nccl_algo_values")
def _nccl_algo(s: _State) -> Iterator[Finding]:
    value = s.get("NCCL_ALGO")
    if value is None:
        return
    why = nccl_list_problem(value, NCCL_ALGORITHMS)
    if why is not None:
        yield s.found("error", "NCCL_ALGO",
                      f"{why} (any case, comma-separated, ^ excludes); RCCL/NCCL fail "
                      "communicator init on it (ncclInvalidUsage)",
                      "set NCCL_ALGO to e.g. Ring or Tree,Ring, or unset it to let RCCL choose")


@rule("map_hbm_trn2_plus")
def _map_hbm(s: _State) -> Iterator[Finding]:
    # Neuron reference: "NEURON_RT_MAP_HBM  Boolean; default: true (Cayman+) ...
    # mmap HBM into the process address space during device init (Trn2+ only)".
    if s.flag("NEURON_RT_MAP_HBM") is not True or s.family_facts is None:
        return
    if s.family_facts.get("map_hbm"):
        return
    yield s.found("warning", "NEURON_RT_MAP_HBM",
                  f"asks to map HBM on {s.family}, but HBM mapping exists on Trn2 and later only "
                  "(\"Trn2+ only\"); the runtime does not map it here",
                  "unset NEURON_RT_MAP_HBM on Trn1/Inf2 instances")


@rule("dump_inputs_on_err_values")
def _dump_inputs(s: _State) -> Iterator[Finding]:
    # Neuron reference: "NEURON_RT_DBG_DUMP_INPUTS_ON_ERR  Signed integer; default: 0
    # ... 0 off, -1 always, or a specific NRT_STATUS to dump on only that failure class."
    # NRT_STATUS codes are >= 0 (0 is NRT_SUCCESS), so -1 is the only negative value.
    value = s.get("NEURON_RT_DBG_DUMP_INPUTS_ON_ERR")
    if value is None or not value.startswith("-") or not value[1:].isdigit() or value == "-1":
        return  # unset, non-negative, -1, or not a number (the type rule reports that)
    if int(value) == 0:
        return  # -0
    yield s.found("error", "NEURON_RT_DBG_DUMP_INPUTS_ON_ERR",
                  "is negative but not -1: the accepted values are 0 (off), -1 (dump on every "
                  "failure) or an NRT_STATUS code (>= 0) to dump on that failure class only",
                  "set NEURON_RT_DBG_DUMP_INPUTS_ON_ERR=-1 (always), 0 (off) or an NRT_STATUS code")


@rule("neuron_num_cores_vs_visible")
def _num_vs_visible(s: _State) -> Iterator[Finding]:
    # Neuron reference: NEURON_RT_NUM_CORES "Deprecated; still applied ... Still parsed
    # and still applied: use NEURON_RT_VISIBLE_CORES to pin an explicit set of cores";
    # NEURON_RT_VISIBLE_CORES "Restrict the process to an explicit set of logical NeuronCores".
    count = s.uint("NEURON_RT_NUM_CORES")
    visible = s.get("NEURON_RT_VISIBLE_CORES")
    if count is None or visible is None:
        return
    cores, _ = index_list(visible)
    if cores is None or len(cores) == count:
        return  # an invalid list is the type rule's; equal counts agree
    yield s.found("error", "NEURON_RT_NUM_CORES",
                  f"asks for {count} core(s) while NEURON_RT_VISIBLE_CORES={visible!r} names "
                  f"{len(cores)}; both are applied by the runtime (NUM_CORES is deprecated but "
                  "still applied), so the process gets a core count one of them does not expect",
                  f"unset NEURON_RT_NUM_CORES and keep NEURON_RT_VISIBLE_CORES (or set "
                  f"NEURON_RT_NUM_CORES={len(cores)})")


@rule("databricks_token_without_host")
def _databricks(s: _State) -> Iterator[Finding]:
    # Reference section 8: "DATABRICKS_HOST (unset) User mlflow client ... Required for
    # Databricks-hosted MLflow when MLflow logging is enabled." / "DATABRICKS_TOKEN
    # (unset) User Databricks APIs Auth token paired with host."
    if s.get("DATABRICKS_TOKEN") is None or s.get("DATABRICKS_HOST") is not None:
        return
    yield s.found("warning", "DATABRICKS_TOKEN",
                  "is set without DATABRICKS_HOST: the token is paired with a workspace host, so "
                  "it is never used and Databricks-hosted MLflow logging cannot connect",
                  "export DATABRICKS_HOST=https://<workspace>.cloud.databricks.com, or unset "
                  "DATABRICKS_TOKEN")
