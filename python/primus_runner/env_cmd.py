"""``primus-cli env list|explain|check|docs``: the variable registry on the command line.

- ``env list [--subsystem S] [--format table|json]``
- ``env explain NAME``: type, default, where set/used, description, rules, deprecation
- ``env check [--strict] [--accelerator A] [--env-file F] [--format text|json] [--container]``:
  check the current environment (or the KEY=VALUE lines of F); exit 2 on an error
  (or, with --strict, a warning), else 0. Text: one line per finding, errors and
  warnings on stderr, info on stdout; nothing at all when there is nothing to say.
- ``env docs [--out FILE]``: the Markdown reference (docs/environment.md).

(``env show`` is a shell command of runner/primus-cli, not this module.)
"""
from __future__ import annotations

import json
import os
import sys
from types import SimpleNamespace

from primus_runner.errors import MissingError, UsageError
from primus_runner.facts import ACCELERATORS

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import Any

    from primus_runner.registry import Registry, Variable

PROG = "primus-cli env"


def _formatter(prog: str) -> argparse.HelpFormatter:
    """A help formatter with a fixed width: the default one imports shutil (~6 ms) on
    every parse just to read the terminal size."""
    columns = os.environ.get("COLUMNS", "")
    width = int(columns) - 2 if columns.isdigit() and int(columns) > 40 else 98
    import argparse

    return argparse.HelpFormatter(prog, width=width)


def _parser() -> argparse.ArgumentParser:
    import argparse

    class _SubParser(argparse.ArgumentParser):
        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            kwargs.setdefault("formatter_class", _formatter)
            super().__init__(*args, **kwargs)

    parser = argparse.ArgumentParser(
        prog=PROG, formatter_class=_formatter, description="List, explain, check and document environment variables "
        "(one registry for both references).")
    sub = parser.add_subparsers(dest="command", metavar="{list,explain,check,show,docs}",
                                parser_class=_SubParser)
    sub.required = True

    p_list = sub.add_parser("list", help="list registered variables",
                            description="List registered variables.")
    p_list.add_argument("--subsystem", metavar="S",
                        help="only this subsystem (a group prefix such as 'neuron' selects "
                             "every neuron-* subsystem)")
    p_list.add_argument("--format", choices=("table", "json"), default="table")

    p_explain = sub.add_parser("explain", help="everything about one variable",
                               description="Print type, default, where set and used, "
                               "description, rules and deprecation of one variable.")
    p_explain.add_argument("name", metavar="NAME")

    p_check = sub.add_parser(
        "check", help="check an environment against every rule",
        description="Check the current environment (or --env-file) against the registry. "
        "Exit 2 on an error (or on a warning with --strict), else 0.")
    p_check.add_argument("--strict", action="store_true", help="treat warnings as errors")
    # primus-cli env check: one line on success (the layers' own check stays silent).
    p_check.add_argument("--say-ok", action="store_true", help=argparse.SUPPRESS)
    p_check.add_argument("--accelerator", choices=ACCELERATORS,
                         help="accelerator of the launch (default: PRIMUS_ACCELERATOR, else "
                              "auto); findings about variables without effect on it become info")
    p_check.add_argument("--env-file", metavar="F", action="append",
                         help="check the KEY=VALUE lines of F instead of the current "
                              "environment (repeatable; later files win; '#' comments)")
    p_check.add_argument("--format", choices=("text", "json"), default="text")
    p_check.add_argument("--container", action="store_true",
                         help="the launch goes into a container: report what the allowlist "
                              "does not forward")

    # env show needs the shell layers: primus-cli runs runner/helpers/envs/env-show.sh.
    sub.add_parser("show", help="effective values and where each came from (primus-cli env show "
                   "[--all] [--env K=V] [--format table|tsv])",
                   description="Run as 'primus-cli env show': it sources the environment layers.")
    p_docs = sub.add_parser("docs", help="write the Markdown reference",
                            description="Print the Markdown reference of every variable, or "
                            "write it to --out FILE.")
    p_docs.add_argument("--out", metavar="FILE", help="write here instead of stdout")
    return parser


_CHECK_VALUES = {"--accelerator": ACCELERATORS,
                 "--format": ("text", "json"), "--env-file": None}


def fast_check_args(argv: list[str]) -> SimpleNamespace | None:
    """Parse ``check`` options without building the argparse parser (the launcher runs
    ``env check`` on every launch; argparse with gettext and locale costs ~7 ms).
    Returns None for anything unusual (help, errors, abbreviations): argparse then
    handles it, with its usual messages and exit codes."""
    if not argv or argv[0] != "check":
        return None
    args = SimpleNamespace(command="check", strict=False, accelerator=None, env_file=None,
                              format="text", container=False, say_ok=False)
    rest = argv[1:]
    i = 0
    while i < len(rest):
        word = rest[i]
        if word in ("--strict", "--container", "--say-ok"):
            setattr(args, word[2:].replace("-", "_"), True)
            i += 1
            continue
        option, eq, value = word.partition("=")
        if option not in _CHECK_VALUES:
            return None
        if not eq:
            if i + 1 >= len(rest):
                return None
            value = rest[i + 1]
            i += 1
        i += 1
        choices = _CHECK_VALUES[option]
        if choices is not None and value not in choices:
            return None
        if option == "--env-file":
            if not value or value.startswith("-"):
                return None
            args.env_file = (args.env_file or []) + [value]
        else:
            setattr(args, option[2:], value)
    return args


def main(argv: list[str]) -> int:
    args = fast_check_args(argv) or _parser().parse_args(argv)
    if args.command == "list":
        return cmd_list(args.subsystem, args.format)
    if args.command == "explain":
        return cmd_explain(args.name)
    if args.command == "check":
        code = cmd_check(args)
        if code == 0 and args.say_ok and args.format == "text" and not getattr(args, "_findings", 0):
            print("[env check] no problems found")
        return code
    if args.command == "show":
        raise UsageError("env show sources the shell environment layers; run it as "
                         "'primus-cli env show [--all] [--env K=V] [--format table|tsv]'.")
    return cmd_docs(args.out)


# What the cluster check does with a variable of each scope (registry field `scope`).
SCOPE_WORDS = {
    "cluster-uniform": "must be identical on every node; the cluster check stops the launch otherwise",
    "per-node": "may differ per node; the cluster check compares what it means (subnet, link "
                "layer, GID type and family)",
    "per-process": "set per rank; never compared",
    "local": "this host's own business; never compared or sent to other nodes",
}


# --------------------------------------------------------------------------- list
def variable_dict(var: Variable) -> dict[str, Any]:
    return {
        "name": var.name, "type": var.type, "accepted": var.accepted(),
        "values": list(var.values) if var.values is not None else None,
        "min": var.min, "max": var.max,
        "default": var.default, "default_note": var.default_note,
        "subsystem": var.subsystem, "section": var.section_title, "reference": var.reference,
        "set_by": var.set_by, "used_by": var.used_by, "description": var.description,
        "launcher_default": var.launcher_default, "launcher_derived": var.launcher_derived,
        "forwarded": var.forwarded, "secret": var.secret, "host_only": var.host,
        "deprecated": None if var.deprecated is None else {
            "status": var.deprecated.status, "replacement": list(var.deprecated.replacement),
            "effect": var.deprecated.effect},
        "rules": list(var.rules), "source": var.source, "scope": var.scope,
    }


def cmd_list(subsystem: str | None, fmt: str) -> int:
    from primus_runner.errors import closest
    from primus_runner.registry import load

    reg = load()
    variables = list(reg.variables)
    if subsystem:
        variables = reg.in_subsystem(subsystem)
        if not variables:
            names = reg.subsystems()
            prefixes = [n.split("-")[0] for n in names]
            groups = sorted(set(names) | {p for p in prefixes if prefixes.count(p) > 1})
            hint = closest(subsystem.lower(), groups)
            raise UsageError(
                f"--subsystem '{subsystem}' matches no variable; accepted: {', '.join(groups)}."
                + (f" Did you mean '{hint}'?" if hint else ""))
    if fmt == "json":
        json.dump([variable_dict(v) for v in variables], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    rows = [("NAME", "TYPE", "DEFAULT", "SUBSYSTEM", "FLAGS")]
    for var in variables:
        flags = ",".join(f for f, on in (("forwarded", var.forwarded), ("secret", var.secret),
                                          ("deprecated", var.deprecated is not None)) if on)
        default = var.default if var.default not in (None, "") else (
            '""' if var.default == "" else "-")
        if len(default) > 40:  # the managed XLA_FLAGS string: `env explain` shows it whole
            default = default[:37] + "..."
        rows.append((var.name, var.type, default, var.subsystem, flags or "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    out = []
    for row in rows:
        out.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4]))
                   + "  " + row[4])
    sys.stdout.write("\n".join(out) + "\n")
    return 0


# --------------------------------------------------------------------------- explain
def cmd_explain(name: str) -> int:
    from primus_runner.masking import mask
    from primus_runner.registry import load

    reg = load()
    var = reg.get(name)
    if var is None:
        prefix, submodule = reg.split_family(name)
        if prefix is not None:
            raise UsageError(
                f"'{name}': '{submodule}' is not a Neuron runtime submodule; accepted: "
                f"{', '.join(reg.log_submodules)} (e.g. {prefix}{reg.log_submodules[0]})")
        hint = reg.suggest(name)
        raise UsageError(f"unknown variable '{name}'." + (f" Did you mean {hint}?" if hint else "")
                         + " Run 'primus-cli env list' for every registered variable.")
    lines = [name if name == var.name else f"{name} (family {var.name})", ""]

    def field(label: str, text: str) -> None:
        lines.append(f"  {label + ':':<13}{text}")

    field("type", f"{var.type} ({var.accepted()})")
    if var.family:
        field("submodules", ", ".join(reg.log_submodules))
    field("default", var.default_text().replace("`", ""))
    field("subsystem", f"{var.subsystem} ({var.section_title}; {var.reference})")
    field("set by", var.set_by or "-")
    field("used by", var.used_by or "-")
    field("scope", f"{var.scope} ({SCOPE_WORDS[var.scope]})")
    if var.launcher_default is not None:
        field("launcher", f"base_env.sh / direct launcher export {var.launcher_default!r}")
    if var.launcher_derived is not None:
        field("launcher", f"base_env.sh derives it from {var.launcher_derived}")
    if var.source:
        field("source", var.source)
    field("container", _container_cell(reg, var, long=True))
    if var.secret:
        field("secret", "yes: the value is passed through but printed as ****")
    if var.deprecated is not None:
        dep = var.deprecated
        text = f"{dep.status}: {dep.effect}"
        if dep.replacement:
            text += f"; use {' or '.join(dep.replacement)}"
        field("deprecated", text)
    if var.invalid_effect:
        field("if invalid", var.invalid_effect)
    field("description", var.description)
    if name in os.environ:
        field("current", repr(mask(name, os.environ[name])))
    if var.rules:
        lines.append("  rules:")
        for rule_id in var.rules:
            r = reg.rules[rule_id]
            lines.append(f"    - [{r.severity}] {rule_id}: {r.text}")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


# --------------------------------------------------------------------------- check
def read_env_file(path: str) -> dict[str, str]:
    """``--env-file`` items (python/primus_runner/envfile.py, the one parser)."""
    from primus_runner import envfile

    return dict(envfile.read(path, "--env-file"))


def shown(value: str) -> str:
    """A value for a one-line message: quoted, control characters escaped, long ones cut."""
    if value == "":
        return "(unset)"
    text = value if len(value) <= 160 else value[:150] + f"...({len(value)} chars)"
    escaped = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return "'" + escaped.replace("'", "'\\''") + "'"


def cmd_check(args: SimpleNamespace | argparse.Namespace, environ: dict[str, str] | None = None,
              forwarded: tuple[str, ...] = ()) -> int:
    """``env check``; ``environ`` replaces os.environ (the launcher's serve step
    hands over the final launch environment this way); ``forwarded``: names a
    container launch passes explicitly."""
    from primus_runner.rules import CheckContext, check, exit_code

    if args.env_file:
        env: dict[str, str] = {}
        for path in args.env_file:
            env.update(read_env_file(path))
    else:
        env = dict(os.environ) if environ is None else environ
    context = CheckContext.from_env(env, container=args.container)
    if forwarded:
        context = context.replace(forwarded=forwarded)
    findings = check(env, accelerator=args.accelerator, context=context)
    code = exit_code(findings, strict=args.strict)
    if args.strict:
        findings = [f.replace(severity="error", message=f"{f.message} [--strict]")
                    if f.severity == "warning" else f for f in findings]
    counts = {s: sum(1 for f in findings if f.severity == s) for s in ("error", "warning", "info")}
    args._findings = len(findings)
    if args.format == "json":
        json.dump({"exit_code": code, "strict": args.strict, "counts": counts,
                   "findings": [f.as_dict() for f in findings]}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return code
    for f in findings:
        stream = sys.stdout if f.severity == "info" else sys.stderr
        stream.write(f"[env check] {f.severity.upper()} {f.variable}={shown(f.value)}: "
                     f"{f.message}. Fix: {f.fix}\n")
    if findings:
        stream = sys.stderr if counts["error"] or counts["warning"] else sys.stdout
        stream.write(f"[env check] {counts['error']} error(s), {counts['warning']} warning(s), "
                     f"{counts['info']} info" + (" - launch blocked (exit 2)" if code else "")
                     + "\n")
    return code


# --------------------------------------------------------------------------- docs
def _container_cell(reg: Any, var: Any, long: bool) -> str:
    """How a host value of ``var`` reaches a container launch."""
    if reg.container_forwards(var.name):
        return "forwarded (section 11 allowlist)" if var.forwarded else "forwarded (prefix)"
    if reg.container_forwards(var.name, neuron=True):
        return "forwarded on Neuron hosts (prefix)"
    if var.host:
        return "not needed (read by the launcher on the host)" if long else "host only"
    return "not forwarded: pass it with --env NAME" if long else "not forwarded (use --env)"


def cmd_docs(out: str | None) -> int:
    from primus_runner.registry import load

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


def _anchor(title: str) -> str:
    keep = "".join(c for c in title.lower() if c.isalnum() or c in " -_")
    return keep.replace(" ", "-")


def render_docs(reg: Registry) -> str:
    out: list[str] = []
    add = out.append
    add("# Environment variables")
    add("")
    add("<!-- Generated by `primus-cli env docs --out docs/environment.md` from "
        "python/primus_runner/data/variables.yaml. Do not edit by hand: "
        "tests/python/test_env_cmd.py fails when this file is stale. -->")
    add("")
    add("Every variable primus-runner knows: the Primus reference (sections 1-14), the AWS "
        "Neuron runtime reference, and the runner's own switches. `primus-cli env explain NAME` "
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
                  "Neuron instance facts", "Rules"):
        add(f"- [{title}](#{_anchor(title)})")
    add("")
    for section in reg.sections:
        add(f"## {section['title']}")
        add("")
        add(f"_{section['reference']}_")
        add("")
        for var in (v for v in reg.variables if v.section == section["id"]):
            _render_variable(reg, var, add)
    add("## Container allowlist")
    add("")
    add("Forwarded from the host into the container when set (Primus reference section 11), in "
        "this order:")
    add("")
    add(", ".join(f"`{name}`" for name in reg.container_forwarded()))
    add("")
    add("Also forwarded when set: every name starting with "
        + ", ".join(f"`{p}`" for p in reg.forward_prefixes) + "; on Neuron hosts also "
        + ", ".join(f"`{p}`" for p in reg.forward_prefixes_neuron) + ". Never forwarded (the "
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
    return "\n".join(out)


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
    add(f"| Across nodes | `{var.scope}`: {SCOPE_WORDS[var.scope]} |")
    if var.launcher_default is not None:
        shown_default = f"`{var.launcher_default}`" if var.launcher_default else '"" (empty)'
        add(f"| Launcher default | {shown_default} |")
    if var.launcher_derived is not None:
        add(f"| Launcher derives from | {_cell(var.launcher_derived)} |")
    if var.source:
        add(f"| Source | {_cell(var.source)} |")
    add(f"| Container | {_container_cell(reg, var, long=False)} |")
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
