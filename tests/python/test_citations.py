"""Citations a newcomer can follow: no source file cites the spec or an issue by
number ("SPEC section N", "SPEC §N", "issue N"); comments name the rule, the README
section or the spec's section title instead. Prose (Markdown), data (YAML, JSON) and
fixtures are not code comments and are not read."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Built from parts so that this file does not match itself.
CITATION = re.compile("SPEC" + r" (?:§|sections?\s)\s*\d|\b[Ii]ssues?" + r" \d+")
SKIP_SUFFIXES = (".md", ".yaml", ".yml", ".json", ".txt", ".lock")


def source_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / name for name in listed
            if name == "Makefile" or ("/" in name and not name.startswith(("tests/fixtures/", "docs/"))
                                      and not name.endswith(SKIP_SUFFIXES))]


def citations(paths: list[Path]) -> list[str]:
    found = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if CITATION.search(line):
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                found.append(f"{where}:{number}: {line.strip()}")
    return found


def test_no_source_file_cites_a_spec_or_issue_number() -> None:
    assert citations(source_files()) == []


def test_the_scan_finds_a_citation(tmp_path: Path) -> None:
    bad = tmp_path / "x.sh"
    bad.write_text("# see " + "issue" + " 12\n# the spec's conventions\n" + "# SPEC" + " section 3\n")
    assert len(citations([bad])) == 2
