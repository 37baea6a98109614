"""Citations a newcomer can follow: no source file cites the spec or an issue by
number ("SPEC section N", "SPEC §N", "issue N"); comments name the rule, the README
section or the spec's section title instead. The comments of YAML files and the code
of the fixtures (.py, .sh) are read too; prose (Markdown) and data (JSON, the YAML
values, the fixtures' trees) are not."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Built from parts so that this file does not match itself.
CITATION = re.compile("SPEC" + r" (?:§|sections?\s)\s*\d|\b[Ii]ssues?" + r" \d+")
SKIP_SUFFIXES = (".md", ".json", ".txt", ".lock")
YAML_SUFFIXES = (".yaml", ".yml")
FIXTURE_CODE = (".py", ".sh", ".bash")


def source_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / name for name in listed
            if name == "Makefile" or ("/" in name and not name.startswith("docs/")
                                      and not name.endswith(SKIP_SUFFIXES)
                                      and (not name.startswith("tests/fixtures/") or name.endswith(FIXTURE_CODE)))]


def cited_text(path: Path, line: str) -> str:
    """What of LINE may hold a citation: the whole line, or a YAML file's comment only."""
    if path.suffix not in YAML_SUFFIXES:
        return line
    return line.split("#", 1)[1] if "#" in line else ""


def citations(paths: list[Path]) -> list[str]:
    found = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if CITATION.search(cited_text(path, line)):
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                found.append(f"{where}:{number}: {line.strip()}")
    return found


def test_no_source_file_cites_a_spec_or_issue_number() -> None:
    assert citations(source_files()) == []


def test_the_scan_finds_a_citation(tmp_path: Path) -> None:
    bad = tmp_path / "x.sh"
    bad.write_text("# see " + "issue" + " 12\n# the spec's conventions\n" + "# SPEC" + " section 3\n")
    assert len(citations([bad])) == 2


def test_the_scan_reads_yaml_comments_not_values(tmp_path: Path) -> None:
    bad = tmp_path / "x.yaml"
    comment = "a: 1  # from " + "issue" + " 27"
    value = "b: 'issue" + " 3 of the magazine'"
    bad.write_text(comment + "\n" + value + "\n")
    assert citations([bad]) == [f"{bad}:1: {comment}"]
