"""One place for each list and number: the launch modes a node runs, the run modes
and the run monitor's thresholds are registry facts (data/variables.yaml
shared_facts node_modes, run_modes, monitor_thresholds; generated into facts.py and
runner/lib/facts.sh). Code reads them; every copy in prose (README.md, docs/*.md,
the registry's descriptions, comments and help text) is found here and compared,
so a copy that drifts fails.

The statements of a threshold are found by their wording (STATEMENTS below), over
whatever files hold them: no file or line is named, so a rewritten README is read
as it is. Each pattern's group is the number as written, in the unit given.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from primus_runner import facts

ROOT = Path(__file__).resolve().parents[2]

# (fact, pattern with one number group, unit factor: the fact = number * factor)
STATEMENTS: list[tuple[str, str, float]] = [
    ("STILL_AFTER", r"moved for \**(\d+(?:\.\d+)?) ?s\** is \*?still", 1),
    ("SAMPLE_GAP", r"sampled \**(\d+(?:\.\d+)?) ?s\** apart", 1),
    ("SETTLE_SAMPLES", r"after \**(\d+)\** equal (?:stack )?samples", 1),
    ("STOPPED_AFTER", r"(?:T|t)`?\)? ?\([^)]*debugger\) for \**(\d+(?:\.\d+)?) ?s\b", 1),
    ("STOPPED_AFTER", r"stopped \(state T[^)]*\) for \**(\d+(?:\.\d+)?) ?s\b", 1),
    ("WORKING_AFTER", r"waited settled for \**(\d+(?:\.\d+)?) ?s\b", 1),
    ("WORKING_REPEAT", r"again every \**(\d+)\** minutes", 60),
    ("STOP_STOPPED_AFTER", r"stays stopped (?:for )?\**(\d+(?:\.\d+)?) ?s\b", 1),
    ("STRAGGLER_ROUND_S", r"in rounds of \**(\d+(?:\.\d+)?) ?s\b", 1),
    ("STRAGGLER_OTHERS_MIN", r"in at least \**(\d+(?:\.\d+)?) ?%\** of their looks", 0.01),
    ("STRAGGLER_THRESHOLD", r"score of \**(\d+(?:\.\d+)?)\** or more", 1),
    ("STRAGGLER_ROUNDS", r"or more in \**(\d+)\** rounds in a row", 1),
    ("STRAGGLER_TABLE_ROUNDS", r"scores table goes to the log every \**(\d+)\** rounds", 1),
    ("TICK", r"looks at every local rank once every \**(\d+(?:\.\d+)?) ?s\b", 1),
]
PROSE_SUFFIXES = (".md", ".yaml", ".py", ".sh", ".bash", ".bats")


def prose_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split()
    skip = ("tests/python/test_lists_once.py", "python/primus_runner/facts.py", "runner/lib/facts.sh")
    return [ROOT / n for n in listed if n.endswith(PROSE_SUFFIXES) and n not in skip
            and not n.startswith("tests/fixtures/") and (ROOT / n).is_file()]


def statements(paths: list[Path]) -> list[tuple[str, str, float, float]]:
    """(where, fact, the number as stated * its unit, the registry's value)."""
    found = []
    for path in paths:
        try:
            text = " ".join(path.read_text(encoding="utf-8").split())  # a statement may wrap
        except (OSError, UnicodeDecodeError):
            continue
        for fact, pattern, factor in STATEMENTS:
            for match in re.finditer(pattern, text, re.I):
                stated = float(match.group(1)) * factor
                where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {match.group(0)!r}"
                found.append((where, fact, stated, float(getattr(facts, "MONITOR_" + fact))))
    return found


def test_every_statement_of_a_threshold_is_the_registrys() -> None:
    found = statements(prose_files())
    wrong = [f"{where} says {stated:g} for {fact}, the registry {value:g}"
             for where, fact, stated, value in found if abs(stated - value) > 1e-9]
    assert wrong == []
    # Not vacuous: docs/environment.md (generated from the registry, env/docs.py
    # monitor_thresholds) states every threshold, whatever the README says.
    in_docs = {fact for where, fact, _, _ in found if where.startswith("docs/environment.md")}
    assert in_docs == {name[len("MONITOR_"):] for name in dir(facts) if name.startswith("MONITOR_")}, in_docs


def test_a_drifted_statement_fails(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text("A rank none of whose signals moved for **5 s** is *still*; rounds: in rounds\nof 30 s.\n"
                   "(SIGSTOP, SIGTSTP, a debugger) for 2 s. Again every 9 minutes.")
    got = {(fact, stated) for _, fact, stated, value in statements([doc]) if stated != value}
    assert got == {("STILL_AFTER", 5.0), ("WORKING_REPEAT", 540.0)}


def test_the_monitor_reads_the_registrys_thresholds() -> None:
    from primus_runner.monitor import straggler, verdicts

    assert (verdicts.STILL_AFTER, verdicts.SAMPLE_GAP, verdicts.STOPPED_AFTER, verdicts.SETTLE_SAMPLES) == (
        facts.MONITOR_STILL_AFTER, facts.MONITOR_SAMPLE_GAP, facts.MONITOR_STOPPED_AFTER,
        facts.MONITOR_SETTLE_SAMPLES)
    assert (straggler.ROUND_S, straggler.THRESHOLD, straggler.ROUNDS) == (
        facts.MONITOR_STRAGGLER_ROUND_S, facts.MONITOR_STRAGGLER_THRESHOLD, facts.MONITOR_STRAGGLER_ROUNDS)
    # No number of its own left in the monitor's modules.
    for name in ("verdicts.py", "straggler.py"):
        text = (ROOT / "python/primus_runner/monitor" / name).read_text()
        assert not re.search(r"^[A-Z_]+ = \d", text, re.M), name


# A list of modes written out: "direct|container", "torchrun | single", "direct, container".
_WORD = r"(?<![-.\w])(?:direct|container|torchrun|single)(?![-.\w'])"
_ALTERNATION = re.compile(_WORD + r"(?:\s*(?:\||,|or)\s*" + _WORD + ")+")


def mode_lists(paths: list[Path]) -> list[tuple[str, set[str]]]:
    found = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for match in _ALTERNATION.finditer(line):
                words = set(re.findall(r"direct|container|torchrun|single", match.group(0)))
                if len(words) < 2:
                    continue  # "torchrun, torchrun's": one word, no list
                found.append((f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{number}", words))
    return found


def test_every_written_list_of_modes_is_the_registrys() -> None:
    node, run = set(facts.NODE_MODES), set(facts.RUN_MODES)
    code = [p for p in prose_files() if p.suffix in (".py", ".sh", ".bash") or p.parent.name == "runner"]
    code += [ROOT / "runner" / "primus-cli", *(ROOT / "runner").glob("primus-cli-*.sh")]
    found = mode_lists([*sorted(set(code)), ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])
    wrong = [f"{where}: {sorted(words)}" for where, words in found
             if (words & node and words & run) or (words & node and words != node) or (words & run and words != run)]
    assert wrong == []
    assert any(words == node for _, words in found) and any(words == run for _, words in found)


def test_no_bash_case_arm_or_python_tuple_holds_a_mode_list() -> None:
    arm = re.compile(r"^\s*(?:direct|container|torchrun|single)\s*\|\s*(?:direct|container|torchrun|single)[^)]*\)")
    tup = re.compile(r"\(\s*[\"'](?:direct|container|torchrun|single)[\"']\s*,\s*[\"'](?:direct|container|torchrun|"
                     r"single)[\"']")
    bad = []
    for path in prose_files():
        if path.suffix not in (".py", ".sh", ".bash") and path.parent.name != "runner":
            continue
        if path.is_relative_to(ROOT / "tests"):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if arm.search(line) or tup.search(line):
                bad.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert bad == []


def test_bash_reads_the_same_lists() -> None:
    text = (ROOT / "runner/lib/facts.sh").read_text()
    assert f"PRIMUS_NODE_MODES=({' '.join(facts.NODE_MODES)})" in text
    assert f"PRIMUS_RUN_MODES=({' '.join(facts.RUN_MODES)})" in text
