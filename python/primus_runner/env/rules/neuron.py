"""Rules for the AWS Neuron runtime variables (Neuron reference)."""
from __future__ import annotations

import os
from collections.abc import Iterator

from primus_runner.env.rules.engine import _State, rule
from primus_runner.env.rules.types import (
    _EVENT_WORD,
    Finding,
    parse_range_list,
)


# --------------------------------------------------------------------------- Neuron rules
@rule("lnc_size")
def _lnc(s: _State) -> Iterator[Finding]:
    names = ["NEURON_LOGICAL_NC_CONFIG"]
    if s.get("NEURON_LOGICAL_NC_CONFIG") is None:
        names.append("NEURON_RT_VIRTUAL_CORE_SIZE")
    facts = s.facts or {}
    for name in names:
        size = s.uint(name)
        if size is None:
            continue
        if size == 0 or size & (size - 1):
            yield s.found("error", name,
                          "must be a power of two (1, 2, 4, 8): it says how many physical "
                          "NeuronCores fuse into one logical core",
                          f"set {name}=2 (the only size publicly supported on Trn2+)")
            continue
        sizes = (s.family_facts or {}).get("lnc_sizes")
        if sizes and size not in sizes:
            # LNC arrived with Trainium2: NeuronCore-v2 (Trn1, Inf2) has LNC 1 only
            # (NCC_EARG001: "On trn1, only lnc=1 is supported").
            yield s.found("error", name,
                          f"is {size}, but {s.family} (NeuronCore-v2) has no logical core size "
                          f"other than {', '.join(map(str, sizes))}: the runtime and compiler "
                          "reject it",
                          f"set {name}={sizes[0]} or unset it (the {s.family} default is "
                          f"{s.family_facts.get('default_lnc') if s.family_facts else sizes[0]})")
            continue
        per_device = facts.get("cores_per_device")
        if per_device and per_device % size:
            yield s.found("error", name,
                          f"must divide the {per_device} physical NeuronCores of one "
                          f"{s.family} device",
                          f"set {name} to a power of two up to {per_device}")
        elif facts.get("trn2_plus") and size != 2:
            yield s.found("warning", name,
                          f"only 2 is publicly supported on Trn2 and later ({s.family})",
                          f"set {name}=2")


@rule("visible_cores_exist")
def _visible_exist(s: _State) -> Iterator[Finding]:
    ranges = parse_range_list(s.get("NEURON_RT_VISIBLE_CORES") or "x")
    total = s.instance_cores()
    if ranges is None or total is None:
        return
    highest = max(high for _, high in ranges)
    if highest >= total:
        yield s.found("error", "NEURON_RT_VISIBLE_CORES",
                      f"names core {highest} but this instance has {total} logical NeuronCores "
                      f"(0-{total - 1}); the runtime fails at init",
                      f"use cores within 0-{total - 1}")


@rule("dma_packetization_cap")
def _dma_cap(s: _State) -> Iterator[Finding]:
    size = s.uint("NEURON_RT_DBG_DMA_PACKETIZATION_SIZE")
    if size is not None and size > 1048575:
        yield s.found("error", "NEURON_RT_DBG_DMA_PACKETIZATION_SIZE",
                      "exceeds the hardware cap of 1 MiB - 1 (1048575 bytes); runtime init fails",
                      "use at most 1048575, or unset it (default 4096)")


@rule("xu_queue_clamp")
def _xu_clamp(s: _State) -> Iterator[Finding]:
    depth = s.uint("NEURON_RT_XU_COMPUTE_MAX_QUEUED_REQUESTS")
    if depth is not None and depth > 63:
        yield s.found("warning", "NEURON_RT_XU_COMPUTE_MAX_QUEUED_REQUESTS",
                      "is above 63: the runtime warns and clamps it to 63 (4 MB host DMA "
                      "allocation limit)",
                      "set it to 63 or less")


@rule("cc_dma_packet_size_ignored")
def _cc_packet(s: _State) -> Iterator[Finding]:
    if s.get("NEURON_RT_DBG_CC_DMA_PACKET_SIZE") is not None:
        yield s.found("warning", "NEURON_RT_DBG_CC_DMA_PACKET_SIZE",
                      "is kept for backward compatibility only: the runtime's per-priority packet "
                      "sizing takes precedence and then ignores it with a warning",
                      "unset NEURON_RT_DBG_CC_DMA_PACKET_SIZE")


@rule("ranks_per_proxy_hw_barrier")
def _ranks_per_proxy(s: _State) -> Iterator[Finding]:
    ranks = s.uint("NEURON_RT_RANKS_PER_NETWORK_PROXY")
    if ranks is None or ranks <= 1:
        return
    barrier = s.flag("NEURON_RT_ENABLE_HW_EXECUTION_BARRIER")
    if s.family == "trn1":
        # The runtime leaves the barrier off on Trn1 (suspected deadlock): do not
        # recommend turning it on there.
        fix = ("export NEURON_RT_RANKS_PER_NETWORK_PROXY=1 (the hardware barrier stays off on "
               "Trn1 because of a suspected deadlock)")
    else:
        fix = "export NEURON_RT_ENABLE_HW_EXECUTION_BARRIER=1, or NEURON_RT_RANKS_PER_NETWORK_PROXY=1"
    if barrier is False:
        yield s.found("error", "NEURON_RT_RANKS_PER_NETWORK_PROXY",
                      "is above 1 with NEURON_RT_ENABLE_HW_EXECUTION_BARRIER=0: sharing a proxy "
                      "needs the hardware barrier, so runtime init fails", fix)
    elif barrier is None and s.family_facts is not None and not s.family_facts.get("hw_barrier_default"):
        yield s.found("error", "NEURON_RT_RANKS_PER_NETWORK_PROXY",
                      f"is above 1 but the hardware barrier is off by default on {s.family}; "
                      "runtime init fails", fix)
    elif barrier is None and s.family_facts is None:
        yield s.found("warning", "NEURON_RT_RANKS_PER_NETWORK_PROXY",
                      "is above 1 and needs the hardware barrier, whose default depends on the "
                      "instance (off on Trn1); init fails where it is off", fix)


@rule("register_hbm_mr_needs_map_hbm")
def _register_hbm(s: _State) -> Iterator[Finding]:
    register = s.flag("NEURON_RT_REGISTER_HBM_MR")
    if register is False:
        return
    explicit = register is True
    map_hbm = s.flag("NEURON_RT_MAP_HBM")
    reason = None
    if map_hbm is False:
        reason = "NEURON_RT_MAP_HBM=0"
    elif map_hbm is None and s.family_facts is not None and not s.family_facts.get("map_hbm") and explicit:
        reason = f"HBM mapping only exists on Trn2 and later, not {s.family}"
    if reason is None:
        return
    yield s.found("warning" if explicit else "info", "NEURON_RT_REGISTER_HBM_MR",
                  f"is forced off because {reason}: one HBM memory region needs HBM mapped",
                  "unset NEURON_RT_MAP_HBM (default true on Trn2+) or NEURON_RT_REGISTER_HBM_MR",
                  s.env.get("NEURON_RT_REGISTER_HBM_MR", ""))


@rule("contiguous_scratchpad_lnc1")
def _contiguous_lnc1(s: _State) -> Iterator[Finding]:
    if s.flag("NEURON_RT_CONTIGUOUS_SCRATCHPAD") is not True:
        return
    lnc, explicit = s.lnc()
    if lnc != 1:
        return
    fix = "unset NEURON_RT_CONTIGUOUS_SCRATCHPAD (it defaults to 0 there) or use LNC 2"
    if s.family_facts is not None and s.family_facts.get("trn2_plus"):
        yield s.found("error", "NEURON_RT_CONTIGUOUS_SCRATCHPAD",
                      f"=1 is unsupported on {s.family} with LNC 1: the explicit value is honoured "
                      "and then rejected, so nrt_init() fails with NRT_INVALID", fix)
    elif s.family_facts is None and explicit:
        yield s.found("warning", "NEURON_RT_CONTIGUOUS_SCRATCHPAD",
                      "=1 with LNC 1 makes nrt_init() fail with NRT_INVALID on Trn2 and later "
                      "(instance unknown here)", fix)


@rule("scratchpad_page_size_ignored")
def _page_size(s: _State) -> Iterator[Finding]:
    if s.get("NEURON_SCRATCHPAD_PAGE_SIZE") is None:
        return
    contiguous = s.flag("NEURON_RT_CONTIGUOUS_SCRATCHPAD")
    if contiguous is True:
        yield s.found("warning", "NEURON_SCRATCHPAD_PAGE_SIZE",
                      "is ignored: NEURON_RT_CONTIGUOUS_SCRATCHPAD=1 forces 64 MiB pages",
                      "unset NEURON_SCRATCHPAD_PAGE_SIZE, or set NEURON_RT_CONTIGUOUS_SCRATCHPAD=0")
    elif contiguous is None:
        yield s.found("info", "NEURON_SCRATCHPAD_PAGE_SIZE",
                      "is ignored wherever contiguous scratchpad is on, which is the driver "
                      "default where supported",
                      "set NEURON_RT_CONTIGUOUS_SCRATCHPAD=0 to make the page size apply")


@rule("low_latency_affinity_cpus")
def _affinity(s: _State) -> Iterator[Finding]:
    ranges = parse_range_list(s.get("NEURON_RT_LOW_LATENCY_TASKS_CPU_AFFINITY") or "x")
    cpus = s.ctx.cpu_count or os.cpu_count()
    if ranges is None or not cpus:
        return
    highest = max(high for _, high in ranges)
    if highest >= cpus:
        yield s.found("error", "NEURON_RT_LOW_LATENCY_TASKS_CPU_AFFINITY",
                      f"names CPU {highest} but this host has {cpus} CPUs (0-{cpus - 1}); the "
                      "runtime validates it against the real CPU count",
                      f"use CPUs within 0-{cpus - 1}")


@rule("neuron_log_pairing")
def _log_pairing(s: _State) -> Iterator[Finding]:
    level, location = s.get("NEURON_RT_LOG_LEVEL"), s.get("NEURON_RT_LOG_LOCATION")
    if level is not None and location is None:
        yield s.found("warning", "NEURON_RT_LOG_LEVEL",
                      "set without NEURON_RT_LOG_LOCATION sends runtime logs to the console only "
                      "and stops syslog output",
                      "also set NEURON_RT_LOG_LOCATION=console (or syslog) to choose the sink")
    elif location is not None and level is None:
        yield s.found("warning", "NEURON_RT_LOG_LOCATION",
                      "set without NEURON_RT_LOG_LEVEL lowers the level to ERROR, so warnings are "
                      "no longer logged",
                      "also set NEURON_RT_LOG_LEVEL=WARN (or the level you want)")


@rule("log_submodule_names")
def _submodules(s: _State) -> Iterator[Finding]:
    valid = s.reg.log_submodules
    for name, value in s.env.items():
        prefix, submodule = s.reg.split_family(name)
        if prefix is None or submodule in valid:
            continue
        upper = submodule.upper()
        hint = upper if upper in valid else None
        fix = (f"rename it to {prefix}{hint}" if hint else
               f"use one of the submodules {', '.join(valid)}")
        yield s.found("warning", name,
                      f"{submodule!r} is not a runtime submodule, so the setting is ignored "
                      f"(valid: {', '.join(valid)})", fix, value)


@rule("oom_dump_dir_length")
def _oom_dir(s: _State) -> Iterator[Finding]:
    path = s.get("NEURON_RT_OOM_DUMP_DIRECTORY")
    if path is not None and len(path) > 200:
        yield s.found("warning", "NEURON_RT_OOM_DUMP_DIRECTORY",
                      f"is {len(path)} characters; paths over 200 log an error and the dumps go "
                      "to the default /tmp instead",
                      "use a path of at most 200 characters")


@rule("debug_stream_buffer_pow2")
def _stream_pow2(s: _State) -> Iterator[Finding]:
    size = s.uint("NEURON_RT_DEBUG_STREAM_BUFFER_SIZE")
    if size is not None and (size == 0 or size & (size - 1)):
        lower = 1 << (size.bit_length() - 1) if size else 262144
        yield s.found("error", "NEURON_RT_DEBUG_STREAM_BUFFER_SIZE",
                      "must be a power of two; runtime init fails otherwise",
                      f"use a power of two such as {lower} or {lower * 2 if size else 262144}")


@rule("inspect_on_fail_implies")
def _on_fail(s: _State) -> Iterator[Finding]:
    if s.flag("NEURON_RT_INSPECT_ON_FAIL") is not True:
        return
    if s.flag("NEURON_RT_INSPECT_ENABLE") is False:
        yield s.found("warning", "NEURON_RT_INSPECT_ENABLE",
                      "=0 is overridden: NEURON_RT_INSPECT_ON_FAIL=1 implies profile capture",
                      "unset NEURON_RT_INSPECT_ENABLE, or unset NEURON_RT_INSPECT_ON_FAIL")
    mode = s.get("NEURON_RT_INSPECT_DEVICE_PROFILE")
    if mode is not None and mode not in ("model", "1"):
        yield s.found("warning", "NEURON_RT_INSPECT_DEVICE_PROFILE",
                      f"={mode} is overridden: NEURON_RT_INSPECT_ON_FAIL=1 forces model mode",
                      "unset NEURON_RT_INSPECT_DEVICE_PROFILE (or set model)")
    if s.flag("NEURON_RT_INSPECT_SYSTEM_PROFILE") is True:
        yield s.found("warning", "NEURON_RT_INSPECT_SYSTEM_PROFILE",
                      "=1 is overridden: NEURON_RT_INSPECT_ON_FAIL=1 captures the device profile "
                      "only",
                      "unset NEURON_RT_INSPECT_SYSTEM_PROFILE, or unset NEURON_RT_INSPECT_ON_FAIL")


@rule("inspect_warmup_model_mode")
def _warmup(s: _State) -> Iterator[Finding]:
    warmup = s.uint("NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP")
    if not warmup or s.flag("NEURON_RT_INSPECT_ON_FAIL") is True:
        return
    mode = s.get("NEURON_RT_INSPECT_DEVICE_PROFILE")
    if mode not in ("model", "1"):
        yield s.found("warning", "NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP",
                      f"is only valid in model mode but NEURON_RT_INSPECT_DEVICE_PROFILE is "
                      f"{mode or 'unset'!r}; the runtime warns and ignores it",
                      "export NEURON_RT_INSPECT_DEVICE_PROFILE=model, or unset the warm-up count")


@rule("inspect_filter_nc_visible")
def _filter_nc(s: _State) -> Iterator[Finding]:
    ranges = parse_range_list(s.get("NEURON_RT_INSPECT_EVENT_FILTER_NC") or "x")
    if ranges is None:
        return
    visible_spec = s.get("NEURON_RT_VISIBLE_CORES")
    visible: set[int] | None = None
    source = ""
    if visible_spec is not None:
        parsed = parse_range_list(visible_spec)
        if parsed is None:
            return  # the type rule reports NEURON_RT_VISIBLE_CORES
        if sum(high - low + 1 for low, high in parsed) <= 65536:
            visible = {c for low, high in parsed for c in range(low, high + 1)}
        source = f"NEURON_RT_VISIBLE_CORES={visible_spec}"
    else:
        total = s.instance_cores()
        if total is not None:
            visible = set(range(total))
            source = f"the {total} logical cores of this instance"
    if visible is None:
        yield s.found("info", "NEURON_RT_INSPECT_EVENT_FILTER_NC",
                      "cannot be checked against the visible cores: neither "
                      "NEURON_RT_VISIBLE_CORES nor the instance type (PRIMUS_NEURON_INSTANCE) "
                      "is known",
                      "set PRIMUS_NEURON_INSTANCE (e.g. trn1.32xlarge) to check it before launch")
        return
    missing = []
    for low, high in ranges:
        if high - low + 1 > len(visible):
            missing.append(high)
            break
        missing.extend(c for c in range(low, high + 1) if c not in visible)
    if missing:
        yield s.found("error", "NEURON_RT_INSPECT_EVENT_FILTER_NC",
                      f"names core(s) {', '.join(map(str, missing[:8]))} that are not visible "
                      f"({source}); the runtime errors on a core that is not visible",
                      "list only visible logical cores")


@rule("inspect_filter_type_names")
def _filter_type(s: _State) -> Iterator[Finding]:
    value = s.get("NEURON_RT_INSPECT_EVENT_FILTER_TYPE")
    if value is None:
        return
    items = value.split(",")
    bad = [item for item in items if not _EVENT_WORD.match(item)]
    if bad:
        yield s.found("error", "NEURON_RT_INSPECT_EVENT_FILTER_TYPE",
                      f"item(s) {', '.join(repr(b) for b in bad)} are not event names; use "
                      "comma-separated categories (hardware, software) or event names, ^name to "
                      "subtract; invalid names make the runtime fail",
                      "e.g. NEURON_RT_INSPECT_EVENT_FILTER_TYPE=hardware,^cc_running")
        return
    known = set(s.reg.neuron.get("event_filter_categories", ())) | set(
        s.reg.neuron.get("event_filter_known_events", ()))
    unknown = [item for item in items if item.lstrip("^") not in known]
    if unknown:
        yield s.found("info", "NEURON_RT_INSPECT_EVENT_FILTER_TYPE",
                      f"event name(s) {', '.join(unknown)} cannot be verified before launch (the "
                      "runtime rejects unknown names with its full list)",
                      "check the names against the runtime's list if init fails")


@rule("inspect_without_enable")
def _inspect_enable(s: _State) -> Iterator[Finding]:
    if s.flag("NEURON_RT_INSPECT_ENABLE") is True or s.flag("NEURON_RT_INSPECT_ON_FAIL") is True:
        return
    for name in ("NEURON_RT_INSPECT_OUTPUT_DIR", "NEURON_RT_INSPECT_CPU_UTIL",
                 "NEURON_RT_INSPECT_HOST_MEMORY", "NEURON_RT_INSPECT_EVENT_FILTER_NC",
                 "NEURON_RT_INSPECT_EVENT_FILTER_TYPE", "NEURON_RT_INSPECT_SYS_TRACE_MAX_EVENTS_PER_NC"):
        if s.get(name) is not None:
            yield s.found("info", name,
                          "selects what profiling captures, but profiling is off: "
                          "NEURON_RT_INSPECT_ENABLE is the master switch",
                          "export NEURON_RT_INSPECT_ENABLE=1 to capture profiles")


@rule("profile_buf_instruction_zero")
def _instruction_zero(s: _State) -> Iterator[Finding]:
    if s.uint("NEURON_RT_PROFILE_BUF_INSTRUCTION_MB") == 0:
        yield s.found("warning", "NEURON_RT_PROFILE_BUF_INSTRUCTION_MB",
                      "=0 creates a zero-sized buffer, so no instruction trace is captured",
                      "unset it (default 128) or give a size in MiB")


@rule("fail_on_nan_verbosity")
def _fail_on_nan(s: _State) -> Iterator[Finding]:
    verbosity = s.get("NEURON_RT_NUMERICAL_ERRORS_VERBOSITY")
    if s.flag("NEURON_FAIL_ON_NAN") is True and verbosity == "none":
        yield s.found("warning", "NEURON_RT_NUMERICAL_ERRORS_VERBOSITY",
                      "=none is overridden: NEURON_FAIL_ON_NAN=1 raises the verbosity to critical",
                      "set NEURON_RT_NUMERICAL_ERRORS_VERBOSITY=critical (or unset it)")


@rule("allow_legacy_neff")
def _legacy_neff(s: _State) -> Iterator[Finding]:
    value = s.uint("NEURON_RT_ALLOW_LEGACY_NEFF")
    if value:
        yield s.found("warning", "NEURON_RT_ALLOW_LEGACY_NEFF",
                      "is for testing only: a NEFF compiled for another target can silently "
                      "corrupt outputs or hang",
                      "recompile the model for this target and unset NEURON_RT_ALLOW_LEGACY_NEFF")


@rule("disable_execution_barrier")
def _disable_barrier(s: _State) -> Iterator[Finding]:
    if s.flag("NEURON_RT_DISABLE_EXECUTION_BARRIER") is True:
        yield s.found("warning", "NEURON_RT_DISABLE_EXECUTION_BARRIER",
                      "is only safe when the workload is truly SPMD and the caller runs its own "
                      "barrier; otherwise executions hang",
                      "unset it unless both preconditions hold (typical for distributed inference)")
