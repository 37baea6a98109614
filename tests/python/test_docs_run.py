"""Docs that cannot lie: README.md and every page under docs/ (docs/testing.md, "Docs
that cannot lie", documents the rules a page follows).

- Every block marked ``<!-- runnable -->`` (or ``<!-- runnable: sysfs=TREE -->``) on the
  line before its ```console fence runs here: each ``$ `` line is a command, the lines
  after it its output (stdout and stderr together); a line ``...`` stands for any lines,
  ``...`` inside a line for any text, a last line ``[exit N]`` for the exit status.
- Every link to a page and every ``#anchor`` resolves (GitHub's anchor rule).
- Every variable of the families the launcher owns (``PRIMUS_*``, ``NCCL_*``, ``RCCL_*``,
  ``NEURON_RT_*``) a page names in backticks is in the registry or read by the code;
  every ``primus-cli <mode>`` is a mode file; every option of the direct options table is
  in ``direct --help``; every code of the exit-code table is one of the registry's.
- Every heading of the README before it became this site (frozen below) has a home.
- No page, and no ``--help``, cites an issue number, a spec or a section sign.
"""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
GENERATED = {"environment.md"}  # the variable reference: generated from the registry


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(p for p in DOCS.glob("*.md"))]


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def prose(text: str) -> str:
    """TEXT without its fenced blocks (what Markdown renders as text and headings)."""
    return re.sub(r"^```.*?^```[^\n]*$", "", text, flags=re.S | re.M)


def github_anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text.replace("`", ""))
    return text.replace(" ", "-")


def headings(text: str) -> list[str]:
    return [m.group(2).strip() for m in re.finditer(r"^(#{1,6}) (.+)$", prose(text), flags=re.M)]


def anchors(text: str) -> set[str]:
    """Every anchor of a page, with GitHub's -1, -2 ... for repeated headings."""
    seen: dict[str, int] = {}
    out = set()
    for heading in headings(text):
        base = github_anchor(heading)
        n = seen.get(base, 0)
        out.add(base if n == 0 else f"{base}-{n}")
        seen[base] = n + 1
    return out


# ---------------------------------------------------------------- runnable blocks

_MARK = re.compile(r"^<!-- runnable(?::\s*sysfs=([\w.-]+))?\s*-->$")


def runnable_blocks() -> list[tuple[str, int, str | None, list[str]]]:
    """(page, line, fixture tree or None, block lines) of every marked block."""
    found = []
    for page in pages():
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            mark = _MARK.match(line.strip())
            if not mark:
                continue
            assert i + 1 < len(lines) and lines[i + 1].strip() == "```console", \
                f"{rel(page)}:{i + 1}: a runnable mark must stand right before a ```console fence"
            end = next(j for j in range(i + 2, len(lines)) if lines[j].strip() == "```")
            found.append((rel(page), i + 1, mark.group(1), lines[i + 2:end]))
    return found


def split_commands(block: list[str]) -> list[tuple[str, list[str]]]:
    """The block's (command, expected output lines), in order."""
    steps: list[tuple[str, list[str]]] = []
    for line in block:
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            assert steps, f"output before the first command: {line!r}"
            steps[-1][1].append(line)
    return steps


def output_pattern(expected: list[str]) -> re.Pattern[str]:
    parts = []
    for line in expected:
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*".join(re.escape(piece) for piece in line.split("...")) + r"[ \t]*\n")
    return re.compile("".join(parts))


def matches(expected: list[str], actual: str) -> bool:
    text = "\n".join(line.rstrip() for line in actual.splitlines()) + "\n" if actual else ""
    return output_pattern(expected).fullmatch(text) is not None


def block_env(tmp: Path, tree: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "PRIMUS_", "MASTER_", "NODE_RANK", "NNODES", "GPUS_PER_NODE",
                                "NCCL_", "RCCL_", "HIP_", "ROCR_", "CUDA_", "NEURON_"))}
    fixture = str(ROOT / "tests" / "fixtures" / "sysfs" / (tree or "no-accel"))
    (tmp / "home").mkdir(exist_ok=True)
    env.update({"PATH": f"{ROOT / '.venv' / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}",
                "PYTHONPATH": str(ROOT / "python"), "HOME": str(tmp / "home"),
                "PRIMUS_WORKSPACE": str(tmp / "output"), "PRIMUS_SYSFS_ROOT": fixture,
                "PRIMUS_DEV_ROOT": fixture, "PRIMUS_LOG_TIMESTAMP": "0", "PRIMUS_LOG_COLOR": "0"})
    return env


def test_the_pages_hold_runnable_blocks() -> None:
    blocks = runnable_blocks()
    assert len(blocks) >= 5
    assert any(page == "README.md" for page, *_ in blocks)
    assert any(tree for _, _, tree, _ in blocks), "one block runs on a fake host tree"


def test_output_matching_elides_only_where_the_page_says_so() -> None:
    assert matches(["a", "...", "d"], "a\nb\nc\nd\n")
    assert matches(["[NODE-0(...)] x"], "[NODE-0(vm)] x\n")
    assert not matches(["a", "d"], "a\nb\nd\n")
    assert not matches(["a"], "a\nb\n")
    assert matches([], "")


@pytest.mark.parametrize("page,line,tree,block", runnable_blocks(),
                         ids=lambda v: v if isinstance(v, str) else str(v))
def test_runnable_block_prints_what_the_page_shows(page: str, line: int, tree: str | None,
                                                   block: list[str], tmp_path: Path) -> None:
    for command, expected in split_commands(block):
        status = 0
        if expected and re.fullmatch(r"\[exit \d+\]", expected[-1].strip()):
            status = int(expected[-1].strip()[6:-1])
            expected = expected[:-1]
        done = subprocess.run(["bash", "-c", command], cwd=ROOT, env=block_env(tmp_path, tree),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=120, check=False, stdin=subprocess.DEVNULL)
        assert done.returncode == status, f"{page}:{line}: `{command}` exited {done.returncode}:\n{done.stdout}"
        assert matches(expected, done.stdout), \
            f"{page}:{line}: `{command}` printed:\n{done.stdout}\nthe page shows:\n" + "\n".join(expected)


# ---------------------------------------------------------------- links

_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def links(page: Path) -> list[str]:
    text = re.sub(r"`[^`\n]*`", "", prose(page.read_text(encoding="utf-8")))
    return [t for t in _LINK.findall(text) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", pages(), ids=rel)
def test_every_link_and_anchor_resolves(page: Path) -> None:
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
            continue
        if anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text(encoding="utf-8")):
            broken.append(f"{target}: no heading with that anchor")
    assert not broken, f"{rel(page)}: {broken}"


def test_the_link_check_sees_links_and_anchors() -> None:
    readme = links(ROOT / "README.md")
    assert "docs/run-on-one-node.md" in readme and "docs/run-under-slurm.md" in readme
    assert "docs/run-in-a-container.md" in readme
    assert github_anchor("What `env check` covers, and what only a launch can see") == \
        "what-env-check-covers-and-what-only-a-launch-can-see"
    assert anchors("# A\n## B\n## B\n") == {"a", "b", "b-1"}


# ---------------------------------------------------------------- names

_FAMILIES = ("PRIMUS_", "NCCL_", "RCCL_", "NEURON_RT_")
_NAME = re.compile(r"\b((?:PRIMUS|NCCL|RCCL|NEURON_RT)_[A-Z0-9_]*[A-Z0-9])\b")


def registered() -> set[str]:
    from primus_runner.env.registry import load

    return {v.name for v in load().variables}


def code_text() -> str:
    listed = subprocess.run(["git", "ls-files", "python", "runner"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.split()
    return "\n".join((ROOT / p).read_text(encoding="utf-8", errors="replace") for p in listed
                     if (ROOT / p).is_file() and not p.endswith((".json", ".txt", ".md")))


def upstream_only_dropped(text: str) -> str:
    """TEXT without the rows naming what only the upstream runner has (verdict "not supported")."""
    return "\n".join(line for line in text.splitlines() if "| not supported because" not in line)


def test_every_variable_a_page_names_exists() -> None:
    known = registered()
    code = code_text()
    unknown = {}
    for page in pages():
        if page.name in GENERATED:
            continue
        for span in re.findall(r"`([^`\n]+)`", upstream_only_dropped(page.read_text(encoding="utf-8"))):
            for name in _NAME.findall(span):
                # A family written as a glob (NCCL_*) or a stem (PRIMUS_SECRET_) is no name.
                if name in known or name + "_" in span or re.search(re.escape(name) + r"\*", span):
                    continue
                if not re.search(r"\b" + re.escape(name) + r"\b", code):
                    unknown.setdefault(rel(page), set()).add(name)
    assert not unknown, f"variables no registry entry and no code knows: {unknown}"


def test_every_mode_a_page_names_is_a_mode_file() -> None:
    modes = {p.name[len("primus-cli-"):-3] for p in (ROOT / "runner").glob("primus-cli-*.sh")}
    wrong = {}
    for page in pages():
        for mode in re.findall(r"primus-cli ([a-z][a-z-]*)\b", upstream_only_dropped(page.read_text(encoding="utf-8"))):
            if mode not in modes:
                wrong.setdefault(rel(page), set()).add(mode)
    assert not wrong, f"modes without a runner/primus-cli-<mode>.sh: {wrong}"


def test_every_direct_option_of_the_table_is_in_its_help() -> None:
    helptext = subprocess.run([str(ROOT / "runner" / "primus-cli"), "direct", "--help"], cwd=ROOT,
                              capture_output=True, text=True, check=False, timeout=60)
    offered = set(re.findall(r"--[a-z][a-z_-]*", helptext.stdout + helptext.stderr))
    text = (DOCS / "run-on-one-node.md").read_text(encoding="utf-8")
    table = text.split("## The `direct` options", 1)[1].split("\n\n", 2)[1]
    options = {m for row in table.splitlines() for m in re.findall(r"--[a-z][a-z_-]*", row.split("|")[1])}
    assert len(options) >= 15
    assert options <= offered, f"options in the table but not in direct --help: {options - offered}"


def test_every_exit_code_of_the_table_is_one_the_code_uses() -> None:
    from primus_runner import facts

    codes = {v for k, v in vars(facts).items() if k.startswith("EXIT_") and isinstance(v, int)}
    text = (DOCS / "exit-codes.md").read_text(encoding="utf-8")
    shown = {int(m) for m in re.findall(r"^\| (\d+) \|", text, flags=re.M)}
    assert {0, 1, 2, 3, 86} <= shown
    assert shown <= codes, f"codes in the table the code never uses: {shown - codes}"


# ---------------------------------------------------------------- the old README's headings

# Every heading of README.md before it was split into these pages (frozen from the
# commit before), with the page and the heading that now hold its content.
OLD_HEADINGS = [
    ("primus-runner", "README.md", "primus-runner"),
    ("What `env check` covers, and what only a launch can see", "docs/configuration.md",
     "What `env check` covers, and what only a launch can see"),
    ("Two commands", "README.md", "Two commands"),
    ("First ten minutes", "README.md", "First ten minutes"),
    ("Entry points", "docs/run-on-one-node.md", "Entry points"),
    ("direct", "docs/run-on-one-node.md", "The `direct` options"),
    ("Run modes", "docs/run-on-one-node.md", "Run modes"),
    ("Two interpreters", "docs/run-on-one-node.md", "Two interpreters"),
    ("slurm", "docs/run-under-slurm.md", "The `slurm` mode"),
    ("container", "docs/run-in-a-container.md", "The `container` mode"),
    ("env and config", "docs/configuration.md", "env and config"),
    ("Configuration", "docs/configuration.md", "Configuration"),
    ("Environment variables and checks", "docs/configuration.md", "Environment variables and checks"),
    ("Your variables reach the ranks", "docs/configuration.md", "Your variables reach the ranks"),
    ("Environment layers", "docs/configuration.md", "Environment layers"),
    ("AWS Neuron (Trainium, Inferentia2)", "docs/run-on-trainium.md", "AWS Neuron (Trainium, Inferentia2)"),
    ("Detection and rank mapping", "docs/configuration.md", "Detection and rank mapping"),
    ("Launch failures caught before the job starts", "docs/doctor.md",
     "Launch failures caught before the job starts"),
    ("Hooks and patches", "docs/hooks-and-patches.md", "Hooks, gates and patches"),
    ("Differences from the reference launcher", "docs/coming-from-upstream.md",
     "Differences from the reference launcher's hooks"),
    ("Data preparation", "docs/run-on-one-node.md", "Data preparation"),
    ("Fleet doctor", "docs/doctor.md", "Fleet doctor"),
    ("Exit codes", "docs/exit-codes.md", "The exit-code table"),
    ("Stopping, preemption and requeue", "docs/stopping-and-requeue.md", "What each signal does"),
    ("Hangs and stacks", "docs/when-a-job-hangs.md", "Hangs and stacks"),
    ("Security", "docs/security.md", "Secrets"),
    ("One owner per rule and per fact", "docs/maintainers.md", "One owner per rule and per fact"),
    ("One grammar, facts once, and the references' constraints", "docs/maintainers.md",
     "One grammar, facts once, and the references' constraints"),
    ("Layout", "docs/maintainers.md", "Layout"),
    ("The embedded default workload", "docs/run-on-one-node.md", "The embedded default workload"),
    ("Hardening", "docs/security.md", "Hardening"),
    ("Drop-in for the upstream Primus runner", "docs/coming-from-upstream.md",
     "Drop-in for the upstream Primus runner"),
]
# Paragraphs of the old README's "direct" section that moved under a heading of their own.
MOVED_PARAGRAPHS = [
    ("Failure report", "docs/when-a-job-fails.md", "The failure report"),
    ("A full disk, a closed console", "docs/when-a-job-fails.md", "A full disk, a closed console"),
    ("What supervises a run on a node", "docs/when-a-job-fails.md", "What supervises a run on a node"),
    ("A helper that dies", "docs/when-a-job-fails.md", "A helper that dies"),
    ("Launch overhead", "docs/run-on-one-node.md", "Launch overhead"),
    ("Live output", "docs/run-on-one-node.md", "Console and live output"),
    ("Container tests", "docs/run-in-a-container.md", "Container tests"),
]


def section(text: str, heading: str) -> str:
    """The text under HEADING up to the next heading of the same or a higher level."""
    body = prose(text)
    match = re.search(r"^(#{1,6}) " + re.escape(heading) + r"\s*$", body, flags=re.M)
    assert match, heading
    level = len(match.group(1))
    rest = body[match.end():]
    end = re.search("^#{1," + str(level) + "} ", rest, flags=re.M)
    return rest[:end.start()] if end else rest


@pytest.mark.parametrize("old,page,heading", OLD_HEADINGS + MOVED_PARAGRAPHS, ids=lambda v: v)
def test_every_old_readme_heading_has_a_home(old: str, page: str, heading: str) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    assert heading in headings(text), f"{page} has no heading {heading!r} for the old README's {old!r}"
    if page != "README.md" or old != "primus-runner":
        assert len(section(text, heading).split()) >= 25, f"{page}: {heading!r} holds too little"


def test_the_frozen_list_is_every_heading_of_the_old_readme() -> None:
    # The old README's headings, as `git show` of the commit before the split listed them.
    assert len(OLD_HEADINGS) == 32
    assert len({old for old, _, _ in OLD_HEADINGS}) == 32


# ---------------------------------------------------------------- citations

# Spelt in pieces so that tests/python/test_citations.py does not read this line as a citation.
_CITED = re.compile(r"\bissue \d+|\b" + "SP" + r"EC\b|\u00a7|behaviour " + "sheet")


@pytest.mark.parametrize("page", pages(), ids=rel)
def test_no_page_cites_a_document_the_repository_lacks(page: Path) -> None:
    cited = [f"{n}: {line.strip()}" for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
             if _CITED.search(line)]
    assert not cited, f"{rel(page)} cites documents the repository lacks: {cited[:5]}"


def test_no_help_cites_a_document_the_repository_lacks() -> None:
    from test_docs_commands import _executables, _python_commands

    modes = sorted(p.name[len("primus-cli-"):-3] for p in (ROOT / "runner").glob("primus-cli-*.sh"))
    cli = str(ROOT / "runner" / "primus-cli")
    python = str(ROOT / ".venv" / "bin" / "python")
    runs = [[cli, "--help"], *([cli, m, "--help"] for m in modes),
            *([str(ROOT / name), "--help"] for name in _executables()),
            *([python, "-m", "primus_runner", c, "--help"] for c in _python_commands())]
    cited = {}
    for argv in runs:
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False, timeout=60,
                              stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT / "python")})
        found = [line for line in (done.stdout + done.stderr).splitlines() if _CITED.search(line)]
        if found:
            cited[" ".join(argv)] = found
    assert len(runs) > 40
    assert not cited, cited
