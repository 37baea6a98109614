"""Citations a reader of this repository can follow. No file cites a document the
repository does not hold: a specification ("the spec", "SPEC section N"), a section
sign instead of a section's name, the reference launcher's fact sheet (by that name
or its file name), a file outside the repository (/work/...), or an issue by number.
Comments and docs name the README or docs section ('README "Exit codes"'), or a
public reference by its own title and section ("Primus docs, environment
variables, section 4"; upstream's runner at a commit: "AMD-AGI/Primus@fd1eeabb
runner/helpers/hooks/").

Read: code, tests, the Makefile, runner/, python/, docs/*.md and every other
Markdown file, YAML files whole (their values are the registry's descriptions and
sources, which docs/environment.md prints); the fixtures' code (.py, .sh, .bash)
and only the comments of the fixtures' YAML (their values are test data). Data
(JSON, .txt, lock files) is not read.

README.md is read too, held to the same rule as every other file.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Built from parts so that this file does not match itself.
_SPEC = "S" + "PEC"
_SIGN = "\u00a7"
CITATION = re.compile(
    rf"\b{_SPEC}\b"                                  # SPEC, SPEC section 3, the SPEC's ...
    r"|\b[Tt]he spec\b"                              # the spec, the spec's conventions
    rf"|{_SIGN}"                                     # a section sign instead of the section's name
    r"|(?i:\bbehaviou?r (?:fact )?" + r"sheet\b)"     # the reference launcher's fact sheet ...
    r"|(?i:primus-runner-" + r"behaviour)"            # ... or its file name
    r"|/work/" + "shared"                            # a file outside the repository
    r"|\b[Ii]ssues? #?" + r"\d+")                    # an issue by number
SKIP_SUFFIXES = (".json", ".txt", ".lock")
YAML_SUFFIXES = (".yaml", ".yml")
FIXTURE_CODE = (".py", ".sh", ".bash")
SELF = "tests/python/test_citations.py"



def source_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / name for name in listed
            if name != SELF and not name.endswith(SKIP_SUFFIXES)
            and not name.startswith("node_modules/")
            and (not name.startswith("tests/fixtures/") or name.endswith(FIXTURE_CODE + YAML_SUFFIXES))]


def cited_text(path: Path, line: str) -> str:
    """What of LINE may hold a citation: the whole line, or a fixture YAML file's comment only."""
    if path.suffix not in YAML_SUFFIXES or "tests/fixtures/" not in path.as_posix():
        return line
    return line.split("#", 1)[1] if "#" in line else ""


def citations(paths: list[Path]) -> list[str]:
    found = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError, IsADirectoryError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if CITATION.search(cited_text(path, line)):
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                found.append(f"{where}:{number}: {line.strip()}")
    return found


def test_no_file_cites_a_document_outside_the_repository() -> None:
    assert citations(source_files()) == []



def test_the_scan_finds_each_kind_of_citation(tmp_path: Path) -> None:
    bad = tmp_path / "x.sh"
    kinds = ["# see " + "issue" + " 12", "# the spec's conventions", "# " + _SPEC + " section 3",
             "# Primus docs " + _SIGN + "4", "# behaviour" + " sheet section 3", "# Behavior fact" + " sheet",
             "# primus-runner-" + "behaviour.md section 1", "# from /work/" + "shared/reference/x.txt"]
    bad.write_text("\n".join(kinds) + "\n# README \"Exit codes\"; Primus docs, environment variables, section 4\n"
                   "# upstream AMD-AGI/Primus@fd1eeabb runner/helpers/hooks/; a module spec; tissue 3\n")
    assert [line.split(": ", 1)[1] for line in citations([bad])] == kinds


def test_the_scan_reads_fixture_yaml_comments_not_values(tmp_path: Path) -> None:
    fixtures = tmp_path / "tests" / "fixtures"
    fixtures.mkdir(parents=True)
    bad = fixtures / "x.yaml"
    comment = "a: 1  # from " + "issue" + " 27"
    value = "b: 'issue" + " 3 of the magazine'"
    bad.write_text(comment + "\n" + value + "\n")
    assert citations([bad]) == [f"{bad}:1: {comment}"]
    # Elsewhere a YAML file is read whole: its values are docs (the registry's descriptions).
    data = tmp_path / "variables.yaml"
    data.write_text(value + "\n")
    assert citations([data]) == [f"{data}:1: {value}"]
