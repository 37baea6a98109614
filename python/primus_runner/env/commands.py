"""``primus-cli env list|explain|check|docs``: the variable registry on the command line.

- ``env list [--subsystem S] [--format table|json]``
- ``env explain NAME|RULE``: type, default, where set/used, description, rules, deprecation;
  or a rule's severity, variables and text
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

from primus_runner.errors import UsageError, closest
from primus_runner.facts import ACCELERATORS

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from primus_runner.env.registry import Variable

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

    from primus_runner.usertext import SuggestingParser

    class _SubParser(SuggestingParser):
        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            kwargs.setdefault("formatter_class", _formatter)
            super().__init__(*args, **kwargs)

    parser = SuggestingParser(
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

    p_explain = sub.add_parser("explain", help="everything about one variable, or one rule",
                               description="Print type, default, where set and used, "
                               "description, rules and deprecation of one variable; or the "
                               "severity, variables and text of one rule (the id a finding names).")
    p_explain.add_argument("name", metavar="NAME|RULE")

    p_check = sub.add_parser(
        "check", help="check an environment against every rule",
        description="Check the current environment (or --env-file) against the registry: the rules "
        "engine alone, as primus-env.sh runs it. 'primus-cli env check' gives the launch's verdict "
        "instead (config, --env, detection, layers and hooks first; see its --help). "
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
    from primus_runner.env.docs import cmd_docs

    return cmd_docs(args.out)


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
    from primus_runner.env.registry import load
    from primus_runner.errors import closest

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
    from primus_runner.env.docs import container_cell, plain_sections, scope_words
    from primus_runner.env.registry import load
    from primus_runner.masking import mask

    reg = load()
    var = reg.get(name)
    if var is None and name in reg.rules:
        return _explain_rule(reg.rules[name])
    if var is None:
        prefix, submodule = reg.split_family(name)
        if prefix is not None:
            raise UsageError(
                f"'{name}': '{submodule}' is not a Neuron runtime submodule; accepted: "
                f"{', '.join(reg.log_submodules)} (e.g. {prefix}{reg.log_submodules[0]})")
        rule_hint = closest(name, list(reg.rules))  # rule ids are lower case
        hint = (rule_hint or reg.suggest(name)) if name.islower() else (reg.suggest(name) or rule_hint)
        raise UsageError(f"unknown variable '{name}' (and no rule has that id)."
                         + (f" Did you mean {hint}?" if hint else "")
                         + " Run 'primus-cli env list' for every registered variable; a finding's"
                         " rule id is in env check --format json.")
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
    field("scope", f"{var.scope} ({scope_words(var)})")
    if var.launcher_default is not None:
        field("launcher", f"fallback {var.launcher_default!r}: base_env.sh exports it only when the user, "
              "a scheduler, the config and detection left it unset")
    if var.launcher_derived is not None:
        field("launcher", f"base_env.sh derives it from {var.launcher_derived}")
    if var.source:
        field("source", var.source)
    field("container", container_cell(reg, var, long=True))
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
    sys.stdout.write(plain_sections("\n".join(lines)) + "\n")
    return 0


def _explain_rule(rule: Any) -> int:
    """``env explain RULE``: a rule's severity, variables and text (the id a finding names)."""
    from primus_runner.env.docs import plain_sections

    lines = [f"{rule.id} (rule)", "", f"  {'severity:':<13}{rule.severity}",
             f"  {'variables:':<13}{', '.join(rule.variables) or '-'}", f"  {'text:':<13}{rule.text}"]
    sys.stdout.write(plain_sections("\n".join(lines)) + "\n")
    return 0


# --------------------------------------------------------------------------- check
def read_env_file(path: str) -> dict[str, str]:
    """``--env-file`` items (python/primus_runner/env/envfile.py, the one parser)."""
    from primus_runner.env import envfile

    return dict(envfile.read(path, "--env-file"))


def shown(value: str) -> str:
    """A value for a one-line message: quoted, control characters escaped, long ones cut."""
    if value == "":
        return "(unset)"
    text = value if len(value) <= 160 else value[:150] + f"...({len(value)} chars)"
    escaped = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return "'" + escaped.replace("'", "'\\''") + "'"


def cmd_check(args: SimpleNamespace | argparse.Namespace, environ: dict[str, str] | None = None,
              forwarded: tuple[str, ...] = (), host_probes: bool = True) -> int:
    """``env check``; ``environ`` replaces os.environ (the launcher's serve step
    hands over the final launch environment this way); ``forwarded``: names a
    container launch passes explicitly; ``host_probes`` False skips the rules
    that touch the network."""
    from primus_runner.env.rules import CheckContext, check, exit_code

    if args.env_file:
        env: dict[str, str] = {}
        for path in args.env_file:
            env.update(read_env_file(path))
    else:
        env = dict(os.environ) if environ is None else environ
    context = CheckContext.from_env(env, container=args.container)
    if forwarded:
        context = context.replace(forwarded=forwarded)
    if not host_probes:
        context = context.replace(host_probes=False)
    findings = check(env, accelerator=args.accelerator, context=context)
    code = exit_code(findings, strict=args.strict)
    args._findings = len(findings)
    write_report(findings, code, strict=args.strict, fmt=args.format)
    return code


def write_report(findings: list[Any], code: int, *, strict: bool, fmt: str) -> None:
    """env check's one output format (text lines or JSON), used by every caller."""
    if strict:
        findings = [f.replace(severity="error", message=f"{f.message} [--strict]")
                    if f.severity == "warning" else f for f in findings]
    counts = {s: sum(1 for f in findings if f.severity == s) for s in ("error", "warning", "info")}
    if fmt == "json":
        json.dump({"exit_code": code, "strict": strict, "counts": counts,
                   "findings": [f.as_dict() for f in findings]}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    for f in findings:
        stream = sys.stdout if f.severity == "info" else sys.stderr
        stream.write(f"[env check] {f.severity.upper()} {f.variable}={shown(f.value)}: "
                     f"{f.message}. Fix: {f.fix}\n")
    if findings:
        stream = sys.stderr if counts["error"] or counts["warning"] else sys.stdout
        stream.write(f"[env check] {counts['error']} error(s), {counts['warning']} warning(s), "
                     f"{counts['info']} info" + (" - launch blocked (exit 2)" if code else "")
                     + "\n")
