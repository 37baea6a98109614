"""``primus-cli env docs [--out FILE]``: the Markdown reference of every
variable (docs/environment.md), generated from the registry; and how a host
value reaches a container launch, the one text ``env explain`` shows too.
"""
from __future__ import annotations

import os
import re
import sys

from primus_runner.errors import MissingError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from primus_runner.env.registry import Registry, Variable

# What the cluster check does with a variable of each scope (registry field `scope`).
SCOPE_WORDS = {
    "cluster-uniform": "must be identical on every node; the cluster check stops the launch otherwise",
    "per-node": "may differ per node; never compared between nodes",
    "per-process": "set per rank; never compared",
    "local": "this host's own business; never compared or sent to other nodes",
}
# The per-node network variables: compared by meaning (python/primus_runner/cluster/meanings.py;
# the list is python/primus_runner/network/common.py's MEANING_VARS).
_MEANING_WORDS = {
    "NCCL_SOCKET_IFNAME": "the IPv4 subnet and class (ethernet, bond, IPoIB) of the interfaces it selects",
    "GLOO_SOCKET_IFNAME": "the IPv4 subnet and class (ethernet, bond, IPoIB) of the interfaces it selects",
    "IP_INTERFACE": "the IPv4 subnet and class (ethernet, bond, IPoIB) of the interface it names",
    "NCCL_IB_HCA": "how many ACTIVE ports it selects and their link layer",
    "NCCL_IB_GID_INDEX": "the GID type and family it points at",
}


def scope_words(var: Any) -> str:
    """What ``var``'s scope means for the cluster check, in words."""
    from primus_runner.network.common import MEANING_VARS

    if var.scope == "per-node" and var.name in MEANING_VARS:
        return (f"may differ per node; the cluster check compares what it means: "
                f"{_MEANING_WORDS.get(var.name, 'its meaning')}")
    return SCOPE_WORDS[var.scope]


def container_cell(reg: Any, var: Any, long: bool) -> str:
    """How a host value of ``var`` reaches a container launch."""
    if reg.container_forwards(var.name):
        if var.forwarded:
            return "forwarded (container allowlist)"
        return "forwarded (prefix)" if var.name.startswith(reg.forward_prefixes) else "forwarded (family)"
    if var.host:
        return "not needed (read by the launcher on the host)" if long else "host only"
    return "not forwarded: pass it with --env NAME" if long else "not forwarded (use --env)"


def cmd_docs(out: str | None) -> int:
    from primus_runner.env.registry import load

    text = render_docs(load())
    if out is None:
        sys.stdout.write(text)
        return 0
    if os.environ.get("PRIMUS_DRY_RUN") == "1":
        from primus_runner import log

        log.info(f"dry run: would write {out} ({text.count(chr(10))} lines); nothing was written.")
        return 0
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise MissingError(f"--out '{out}': directory '{parent}' does not exist; "
                           "create it or choose another path")
    with open(out, "w", encoding="utf-8") as handle:
        handle.write(text)
    return 0


def _md(text: str) -> str:
    """Escape < and > outside `code` spans (a bare <submodule> would vanish as HTML)."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def _cell(text: str) -> str:
    return _md(text).replace("|", "\\|").replace("\n", " ")


def plain_sections(text: str) -> str:
    """TEXT with each section sign of a source citation ("environment variables \u00a71")
    spelt "section 1": what a user reads names sections in words."""
    return re.sub(r"\u00a7\s*", "section ", text)


def _anchor(title: str) -> str:
    keep = "".join(c for c in title.lower() if c.isalnum() or c in " -_")
    return keep.replace(" ", "-")


def _num(value: float) -> str:
    return f"{value:g}"


def monitor_thresholds() -> list[str]:
    """The run monitor's thresholds in words (pure): the registry's numbers
    (shared_facts monitor_thresholds, facts.py), each sentence in the wording
    tests/python/test_lists_once.py finds and compares everywhere else."""
    from primus_runner import facts as f

    return [
        f"The monitor looks at every local rank once every **{_num(f.MONITOR_TICK)} s**.",
        f"A rank none of whose signals moved for **{_num(f.MONITOR_STILL_AFTER)} s** is *still*; its stack is "
        f"then sampled **{_num(f.MONITOR_SAMPLE_GAP)} s** apart, and after **{f.MONITOR_SETTLE_SAMPLES}** "
        "equal samples it is *settled*.",
        f"A rank in state `T` or `t` (SIGSTOP, SIGTSTP, a debugger) for **{_num(f.MONITOR_STOPPED_AFTER)} s** "
        f"is named stopped; with `PRIMUS_HANG_ACTION=stop`, a rank that stays stopped for "
        f"**{_num(f.MONITOR_STOP_STOPPED_AFTER)} s** stops the run.",
        f"When the others have waited settled for **{_num(f.MONITOR_WORKING_AFTER)} s** while a rank still "
        f"moves, one INFO line names it, again every **{_num(f.MONITOR_WORKING_REPEAT / 60)}** minutes while "
        "it lasts.",
        f"Stragglers: in rounds of **{_num(f.MONITOR_STRAGGLER_ROUND_S)} s**, counted when the others wait in "
        f"at least **{_num(f.MONITOR_STRAGGLER_OTHERS_MIN * 100)} %** of their looks; a score of "
        f"**{_num(f.MONITOR_STRAGGLER_THRESHOLD)}** or more in **{f.MONITOR_STRAGGLER_ROUNDS}** rounds in a "
        f"row names the rank; the scores table goes to the log every **{f.MONITOR_STRAGGLER_TABLE_ROUNDS}** "
        "rounds.",
    ]


def render_docs(reg: Registry) -> str:
    out: list[str] = []
    add = out.append
    add("# Environment variables")
    add("")
    add("<!-- Generated by `primus-cli env docs --out docs/environment.md` from "
        "python/primus_runner/data/variables.yaml. Do not edit by hand: "
        "tests/python/test_env_cmd.py fails when this file is stale. -->")
    add("")
    add("Every variable primus-runner knows: the Primus docs' [environment variables]("
        "https://rocm.docs.amd.com/projects/primus/en/latest/03-configuration-reference/environment-variables.html) "
        "(sections 1-14), the AWS Neuron runtime's environment variables, and the runner's own "
        "switches. `primus-cli env explain NAME` "
        "prints one entry; `primus-cli env check` applies the rules listed with each variable "
        "before a launch (`primus-cli direct` runs it as its last step).")
    add("")
    add("Severity of a finding: **error** where the launcher, the runtime or the job would fail "
        "(the launch stops, exit 2); **warning** where the runtime silently clamps, ignores, "
        "overrides or deprecates (printed, exit 0; `--strict` makes it an error); **info** for "
        "advice. An empty value counts as unset. Values of secret variables (names ending in "
        "`_TOKEN`, `_API_KEY`, `_SECRET`, `_PASSWORD`) are printed as `****`.")
    add("")
    add("## Contents")
    add("")
    for section in reg.sections:
        count = sum(1 for v in reg.variables if v.section == section["id"])
        add(f"- [{section['title']}](#{_anchor(section['title'])}) ({count})")
    for title in ("Container allowlist", "Managed XLA flags", "Neuron log submodules",
                  "Neuron instance facts", "Run monitor thresholds", "Rules"):
        add(f"- [{title}](#{_anchor(title)})")
    add("")
    for section in reg.sections:
        add(f"## {section['title']}")
        add("")
        add(f"_{section['reference']}_")
        add("")
        for var in (v for v in reg.variables if v.section == section["id"]):
            _render_variable(reg, var, add)
    add("## Run monitor thresholds")
    add("")
    add("Fixed, nothing to tune (docs/when-a-job-hangs.md \"Hangs and stacks\"); only `PRIMUS_HANG_TIMEOUT` and "
        "`PRIMUS_HANG_ACTION` are settings.")
    add("")
    for line in monitor_thresholds():
        add(f"- {line}")
    add("")
    add("## Container allowlist")
    add("")
    add("Forwarded from the host into the container when set (the Primus docs' environment "
        "variables, section 11), in this order:")
    add("")
    add(", ".join(f"`{name}`" for name in reg.container_forwarded()))
    add("")
    add("Also forwarded when set: every name starting with "
        + ", ".join(f"`{p}`" for p in reg.forward_prefixes) + " (the reference launcher's "
        "prefixes) or with " + ", ".join(f"`{p}`" for p in reg.forward_families)
        + " (the families of job settings the references use; the reference launcher drops "
        "them). The launch summary names each forwarded name the registry does not know. "
        "Never forwarded (the "
        "container launcher sets them): " + ", ".join(f"`{n}`" for n in sorted(reg.container_own))
        + ". Anything else, `TE_*` included, needs `--env NAME` or `--env NAME=VALUE`.")
    add("")
    add("## Managed XLA flags")
    add("")
    add("Appended by the MaxText backend after the inherited `XLA_FLAGS` (so they win); "
        "override one with `XLA_FLAGS_APPEND`.")
    add("")
    add("| Flag | Value |")
    add("|---|---|")
    for item in reg.managed_xla_flags:
        value = item["value"]
        if item.get("parameter"):
            value += f" (from `{item['parameter']}`)"
        add(f"| `{item['flag']}` | {_cell(value)} |")
    add("")
    add("## Neuron log submodules")
    add("")
    add("Valid `<submodule>` names for `NEURON_RT_LOG_LEVEL_<submodule>` and "
        "`NEURON_RT_LOG_LOCATION_<submodule>`: "
        + ", ".join(f"`{s}`" for s in reg.log_submodules) + ". `HAL` defaults to `ERROR`, the "
        "others to `WARN`.")
    add("")
    add("## Neuron instance facts")
    add("")
    add("Used by `env check` when the instance type is known (`PRIMUS_NEURON_INSTANCE`). Default "
        "LNC, hardware-barrier default and HBM mapping come from the runtime reference; cores per "
        "device and devices per instance are AWS instance facts.")
    add("")
    add("| Family | Default LNC | LNC sizes | HW barrier default | HBM mapping | Cores per device |")
    add("|---|---|---|---|---|---|")
    for family, facts in reg.neuron.get("families", {}).items():
        lncs = ", ".join(str(n) for n in facts.get("lnc_sizes", ())) or "powers of two"
        add(f"| {family} | {facts['default_lnc']} | {lncs} | "
            f"{'on' if facts['hw_barrier_default'] else 'off'}"
            f" | {'yes' if facts['map_hbm'] else 'no'} | {facts['cores_per_device'] or 'unknown'} |")
    add("")
    efa = reg.neuron.get("efa_devices_per_instance", {})
    add("| Instance type | Neuron devices | EFA devices (AWS) |")
    add("|---|---|---|")
    for instance, devices in reg.neuron.get("devices_per_instance", {}).items():
        add(f"| {instance} | {devices} | {efa.get(instance, 'as detected')} |")
    add("")
    sizes = ", ".join(str(n) for n in reg.neuron.get("trn1_collective_cores", ()))
    if sizes:
        add(f"Trn1 collectives accept {sizes} or a multiple of "
            f"{reg.neuron.get('trn1_collective_multiple')} NeuronCores per node.")
        add("")
    add("## Rules")
    add("")
    add("| Rule | Severity | Variables | What it enforces |")
    add("|---|---|---|---|")
    for rule in reg.rules.values():
        names = ", ".join(f"`{n}`" for n in rule.variables) or "all"
        add(f"| `{rule.id}` | {rule.severity} | {names} | {_cell(rule.text)} |")
    add("")
    return plain_sections("\n".join(out))


def _render_variable(reg: Registry, var: Variable, add: Callable[[str], None]) -> None:
    add(f"### `{var.name}`")
    add("")
    add(_md(var.description))
    add("")
    add("| | |")
    add("|---|---|")
    add(f"| Type | {_cell(var.type)}: {_cell(var.accepted())} |")
    if var.family:
        add(f"| Submodules | {', '.join(reg.log_submodules)} |")
    add(f"| Default | {_cell(var.default_text())} |")
    add(f"| Subsystem | `{var.subsystem}` |")
    add(f"| Set by | {_cell(var.set_by or '-')} |")
    add(f"| Used by | {_cell(var.used_by or '-')} |")
    add(f"| Across nodes | `{var.scope}`: {scope_words(var)} |")
    if var.launcher_default is not None:
        shown_default = f"`{var.launcher_default}`" if var.launcher_default else '"" (empty)'
        add(f"| Launcher default | {shown_default} |")
    if var.launcher_derived is not None:
        add(f"| Launcher derives from | {_cell(var.launcher_derived)} |")
    if var.source:
        add(f"| Source | {_cell(var.source)} |")
    add(f"| Container | {container_cell(reg, var, long=False)} |")
    if var.secret:
        add("| Secret | yes (printed as `****`) |")
    if var.deprecated is not None:
        dep = var.deprecated
        text = f"{dep.status}: {dep.effect}"
        if dep.replacement:
            text += "; use " + " or ".join(f"`{r}`" for r in dep.replacement)
        add(f"| Deprecated | {_cell(text)} |")
    if var.invalid_effect:
        add(f"| If invalid | {var.invalid_severity}: {_cell(var.invalid_effect)} |")
    if var.rules:
        add("| Rules | " + "<br>".join(
            f"{reg.rules[r].severity} `{r}`: {_cell(reg.rules[r].text)}" for r in var.rules)
            + " |")
    add("")
