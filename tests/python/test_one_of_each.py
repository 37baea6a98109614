"""One of each: an exit code is defined once (the registry's shared_facts, read by
Python through the generated python/primus_runner/facts.py and by bash through
runner/lib/facts.sh), and the package's floors have no exception for one module
(a room stands on one floor, so no import runs back up to reach it).

Each scan has a test that plants the breach and shows the scan reports it.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GENERATED = (ROOT / "python" / "primus_runner" / "facts.py", ROOT / "runner" / "lib" / "facts.sh")
_EXIT_NAME = r"(?:[A-Z0-9]+_)*EXIT(?:_[A-Z0-9]+)*"
_BASH_SET = re.compile(r"^\s*(?:(?:export|readonly|local|declare(?:\s+-\w+)*)\s+)?(" + _EXIT_NAME + r")=(\S*)")


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return [t for target in node.targets for t in (target.elts if isinstance(target, ast.Tuple) else [target])]
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return [node.target]
    return []


def python_definitions(path: Path) -> list[tuple[str, bool]]:
    """The exit-code names ``path`` defines (assigned, or imported under a new name),
    each with whether its value is a literal number."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        value = getattr(node, "value", None)
        items = value.elts if isinstance(value, ast.Tuple) else [value]
        literal = any(isinstance(e, ast.Constant) and isinstance(e.value, int) for e in items)
        for target in _targets(node):
            if isinstance(target, ast.Name) and re.fullmatch(_EXIT_NAME, target.id):
                found.append((target.id, literal))
        if isinstance(node, ast.ImportFrom):
            found += [(a.asname, False) for a in node.names
                      if a.asname and a.asname != a.name and re.fullmatch(_EXIT_NAME, a.asname)]
    return found


def bash_definitions(path: Path) -> list[tuple[str, bool]]:
    """The exit-code names a bash file assigns, with whether the value is a number.
    ``NAME=$PRIMUS_NAME`` (the hook protocol's spelling of a generated fact) reads
    the fact; it defines nothing."""
    found = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        match = _BASH_SET.match(line)
        if match and match.group(2) not in (f"$PRIMUS_{match.group(1)}", f"${{PRIMUS_{match.group(1)}}}"):
            found.append((match.group(1), match.group(2).strip("'\"").isdigit()))
    return found


def sources() -> list[Path]:
    import archscan

    return [p for p in archscan.sources(ROOT) if p.suffix == ".py" or archscan.is_bash(p)]


def exit_code_breaches(files: list[Path], generated: tuple[Path, ...] = GENERATED) -> list[str]:
    """Names defined in more than one place (the generated pair counts as one: bash
    spells the names with a PRIMUS_ prefix) and literal values outside the pair."""
    places: dict[str, set[str]] = {}
    out = []
    for path in files:
        scan = python_definitions if path.suffix == ".py" else bash_definitions
        for name, literal in scan(path):
            own = path in generated
            key = name.removeprefix("PRIMUS_") if own and path.suffix != ".py" else name
            places.setdefault(key, set()).add("the registry's shared_facts" if own else str(path))
            if literal and not own:
                out.append(f"{path}: {name} is a number written outside the registry's shared_facts")
    out += [f"{name} is defined in {len(where)} places: {', '.join(sorted(where))}"
            for name, where in sorted(places.items()) if len(where) > 1]
    return out


def test_no_exit_code_name_is_defined_twice_nor_written_outside_the_registry() -> None:
    files = sources()
    assert ROOT / "runner" / "lib" / "watchdog.sh" in files and GENERATED[1] in files
    assert exit_code_breaches(files) == []


def test_the_exit_code_scan_finds_each_breach(tmp_path: Path) -> None:
    one, two, sh = tmp_path / "one.py", tmp_path / "two.py", tmp_path / "lib"
    one.write_text("from primus_runner.facts import EXIT_INVALID\nEXIT_MISMATCH = EXIT_INVALID\n")
    two.write_text("from primus_runner.facts import EXIT_INVALID as EXIT_MISMATCH\nEXIT_UNFIT, X = 3, 1\n")
    sh.write_text("#!/bin/bash\nPRIMUS_HANG_EXIT_CODE=86\nHOOK_EXIT_MISSING=$PRIMUS_HOOK_EXIT_MISSING\n"
                  "  local EXIT_UNFIT=3\n")
    found = exit_code_breaches([one, two, sh], generated=())
    assert found == [f"{two}: EXIT_UNFIT is a number written outside the registry's shared_facts",
                     f"{sh}: PRIMUS_HANG_EXIT_CODE is a number written outside the registry's shared_facts",
                     f"{sh}: EXIT_UNFIT is a number written outside the registry's shared_facts",
                     f"EXIT_MISMATCH is defined in 2 places: {one}, {two}",
                     f"EXIT_UNFIT is defined in 2 places: {sh}, {two}"]


def test_the_stop_after_a_verdict_exits_with_the_facts_code(tmp_path: Path) -> None:
    from primus_runner import facts
    from primus_runner.monitor.supervise import stop_code

    text = GENERATED[1].read_text(encoding="utf-8")
    assert f"PRIMUS_EXIT_HANG_STOPPED={facts.EXIT_HANG_STOPPED}\n" in text
    assert stop_code(str(tmp_path), 15) == 143
    (tmp_path / "hang-stop").touch()  # the monitor stopped the run (monitor/act.py)
    assert stop_code(str(tmp_path), 15) == facts.EXIT_HANG_STOPPED


@pytest.mark.parametrize("name", ["EXIT_MISMATCH"])
def test_a_name_the_package_once_defined_twice_is_gone(name: str) -> None:
    assert not [p for p in sources() if p.suffix == ".py" and any(n == name for n, _ in python_definitions(p))]


def floor_exceptions(floors: dict[str, int]) -> list[str]:
    """Keys of the floor table that give one module of a room its own floor."""
    return [f"{key} (floor {level}) stands apart from its room {key.split('.')[0]}"
            for key, level in floors.items() if "." in key]


def test_no_module_has_a_floor_of_its_own_and_no_import_runs_back_up() -> None:
    import archscan
    from test_architecture import FLOORS

    assert floor_exceptions(FLOORS) == []
    assert archscan.upward(ROOT, FLOORS) == []
    # The room the env rules used to reach upward for is a floor below them now.
    assert FLOORS["scheduler"] < FLOORS["env"] < FLOORS["cluster"]


def test_the_floor_scan_finds_an_exception_and_the_arrow_it_hid() -> None:
    import archscan
    from test_architecture import FLOORS

    old = {**FLOORS, "cluster.hostlist": 1, "cluster.schedulers": 1}
    assert floor_exceptions(old) == ["cluster.hostlist (floor 1) stands apart from its room cluster",
                                     "cluster.schedulers (floor 1) stands apart from its room cluster"]
    # Without the exception, an env rule importing from the cluster room runs back up.
    assert archscan.floor("primus_runner.cluster.schedulers", FLOORS) > archscan.floor(
        "primus_runner.env.rules.launch_inputs", FLOORS)


# --------------------------------------------------------------------------- the modes
_SEPARATOR = re.compile(r"[\s,|/`'\"]*(?:and|or)?[\s,|/`'\"]*")


def modes(runner: Path) -> list[str]:
    """The modes: runner/primus-cli-<mode>.sh files with a "# Summary:" header line
    (what runner/primus-cli dispatches to, lists in --help and offers in "did you mean")."""
    found = []
    for path in sorted(runner.glob("primus-cli-*.sh")):
        lines = path.read_text(encoding="utf-8").splitlines()
        header = [ln for ln in lines[1:] if ln.startswith("#")][: len(lines)]
        if any(ln.startswith("# Summary: ") for ln in header[:20]):
            found.append(path.name.removeprefix("primus-cli-").removesuffix(".sh"))
    return found


def hand_written_lists(files: list[Path], names: list[str]) -> list[str]:
    """Lines that write three or more mode names one after the other (a list by hand)."""
    word = re.compile(r"(?<![\w-])(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + r")(?![\w-])")
    out = []
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            run: list[str] = []
            end = None
            for match in word.finditer(line):
                if end is not None and not _SEPARATOR.fullmatch(line[end:match.start()]):
                    run = []
                run.append(match.group(1))
                end = match.end()
                if len(set(run)) >= 3:
                    out.append(f"{path}:{number}: {line.strip()}")
                    break
    return out


def readme_modes(text: str) -> list[str]:
    """The modes the README's entry-point sentence names (``modes `a`, `b` ...``)."""
    match = re.search(r"modes ((?:`[a-z][a-z0-9-]*`(?:,\s*(?:and\s+)?|\s+and\s+)?)+)", text)
    return re.findall(r"`([a-z][a-z0-9-]*)`", match.group(1)) if match else []


def test_the_modes_are_the_files_and_nothing_else_lists_them() -> None:
    import archscan

    runner = ROOT / "runner"
    names = modes(runner)
    assert {"direct", "container", "slurm", "env", "config", "doctor", "stacks"} <= set(names)
    files = [p for p in archscan.sources(ROOT) if runner in p.parents]
    assert hand_written_lists(files, names) == []
    assert sorted(readme_modes((ROOT / "README.md").read_text(encoding="utf-8"))) == sorted(names)


def test_the_mode_scans_find_a_list_by_hand_and_a_readme_that_drifted(tmp_path: Path) -> None:
    runner = tmp_path / "runner"
    runner.mkdir()
    for name, summary in (("direct", "# Summary: one host"), ("slurm", "# Summary: all nodes"),
                          ("container", "# Summary: in a container"), ("env-check", "# part of env")):
        (runner / f"primus-cli-{name}.sh").write_text(f"#!/usr/bin/env bash\n# Usage: x\n{summary}\n")
    names = modes(runner)
    assert names == ["container", "direct", "slurm"]
    dispatch = runner / "primus-cli"
    dispatch.write_text("case $m in\n  direct | container | slurm) exec x ;;\nesac\n"
                        'die "accepted: direct, slurm and container"\n# slurm-entry runs direct\n')
    assert hand_written_lists([dispatch], names) == [
        f"{dispatch}:2: direct | container | slurm) exec x ;;",
        f"{dispatch}:4: die \"accepted: direct, slurm and container\""]
    assert readme_modes("modes `direct`, `slurm`, `container` (see") == ["direct", "slurm", "container"]
    assert sorted(readme_modes("modes `direct`, `slurm` (see")) != names
