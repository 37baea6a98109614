"""Docs that cannot drift from the code.

- Every ``runner/primus-cli ...`` command of a ```bash block in README.md, in
  every page under docs/ and of an example header (the ``#`` comment lines at the top of examples/*) runs
  as a dry run (the global ``--dry-run`` put before the mode) and exits 0. For
  the README, the files a user would bring (``train.py``, ``exp.yaml``, ``job.yaml``,
  ``mypkg/train.py``, ``primus/cli/main.py``) are placeholders in a scratch
  working directory; an example's header must work in the checkout alone
  (``runner/``, ``python/``, ``examples/`` and ``.venv`` linked). Lines that
  start anything else (``srun ...``, ``make demo``) are not commands of the
  launcher: the live Slurm suite and tests/bats/demo.bats run those.
- Every link to ``#anchor`` of the README or a page under docs/ names a heading
  of that page (GitHub's anchor rule: lower case, punctuation dropped, spaces to
  ``-``); tests/python/test_docs_run.py checks the links between pages.
- No help text, header comment or message cites a specification document or a
  numbered "reference" section: those documents are not in the repository
  (tests/python/test_citations.py scans every file for the same).
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "environment.md")]
LAUNCHER = "runner/primus-cli"


def fenced_lines(text: str) -> list[str]:
    """The lines of the ```bash / ```sh code blocks of a Markdown TEXT (what a
    user copies into a shell; a file listing is a block without a language),
    continuations joined."""
    lines: list[str] = []
    inside = shell = False
    pending = ""
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            inside = not inside
            shell = inside and line.strip()[3:] in ("bash", "sh", "shell", "console")
            continue
        if not shell:
            continue
        if not inside:
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        lines.append(pending + line)
        pending = ""
    return lines


def header_lines(path: Path) -> list[str]:
    """The comment lines at the top of an example file, without the '#'."""
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        found.append(line.lstrip("#").strip())
    return found


def launcher_commands(lines: list[str]) -> list[list[str]]:
    """The argv of every line that starts the launcher (comments dropped)."""
    commands = []
    for line in lines:
        if not line.strip().startswith(LAUNCHER + " "):
            continue
        commands.append(shlex.split(line, comments=True))
    return commands


def readme_commands() -> list[list[str]]:
    """The launcher commands of the README and of every page under docs/."""
    found: list[list[str]] = []
    for page in PAGES:
        found.extend(c for c in launcher_commands(fenced_lines(page.read_text(encoding="utf-8"))) if c not in found)
    return found


def example_commands() -> list[list[str]]:
    found = []
    for path in sorted((ROOT / "examples").iterdir()):
        found.extend(launcher_commands(header_lines(path)))
    return found


def dry_run(argv: list[str]) -> list[str]:
    """ARGV with the global --dry-run before the mode."""
    return [argv[0], "--dry-run", *argv[1:]]


def checkout(work: Path) -> Path:
    """WORK holding links to the repository, as a fresh clone's top directory."""
    for name in ("runner", "python", "examples", ".venv", "pyproject.toml"):
        (work / name).symlink_to(ROOT / name)
    for name in ("docs", "home", "sysfs"):
        (work / name).mkdir()
    return work


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkout alone: what an example's header must work in."""
    return checkout(tmp_path_factory.mktemp("bare"))


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkout and the files a user would bring, which the README names."""
    work = checkout(tmp_path_factory.mktemp("docs"))
    shutil.copy(ROOT / "examples" / "cpu_pretrain.yaml", work / "exp.yaml")
    (work / "job.yaml").write_text("direct:\n  numa: false\n")  # a runner config (--config)
    (work / "train.py").write_text("print('train')\n")
    (work / "mypkg").mkdir()
    (work / "mypkg" / "__init__.py").write_text("")
    (work / "mypkg" / "train.py").write_text("print('train')\n")
    (work / "primus" / "cli").mkdir(parents=True)
    (work / "primus" / "cli" / "main.py").write_text("print('main')\n")
    return work


def launch_env(work: Path) -> dict[str, str]:
    """The environment of bats' launcher_setup: no accelerator, an own HOME and workspace."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "PRIMUS_", "MASTER_", "NODE_RANK", "NNODES", "GPUS_PER_NODE"))}
    env.update({"HOME": str(work / "home"), "PRIMUS_WORKSPACE": str(work / "output"),
                "PRIMUS_SYSFS_ROOT": str(work / "sysfs"), "PRIMUS_DEV_ROOT": str(work / "sysfs"),
                "PRIMUS_LOG_COLOR": "0", "PRIMUS_WORKLOAD_PYTHON": str(ROOT / ".venv" / "bin" / "python"),
                "HF_TOKEN": ""})
    return env


def test_the_readme_and_the_examples_show_launcher_commands() -> None:
    # The extraction itself must find what a user reads first.
    readme = [" ".join(c) for c in readme_commands()]
    assert any("--module primus_runner -- train pretrain --config examples/cpu_pretrain.yaml" in c
               for c in readme)
    assert any(" slurm " in c for c in readme) and any(" container " in c for c in readme)
    assert example_commands(), "examples/cpu_pretrain.yaml's header shows how to run it"


def assert_dry_run(argv: list[str], work: Path) -> None:
    done = subprocess.run(dry_run(argv), cwd=work, env=launch_env(work), capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, f"{shlex.join(argv)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"


@pytest.mark.parametrize("argv", readme_commands(), ids=" ".join)
def test_every_readme_command_runs_as_a_dry_run(argv: list[str], scratch: Path) -> None:
    assert_dry_run(argv, scratch)


@pytest.mark.parametrize("argv", example_commands(), ids=" ".join)
def test_every_example_header_command_runs_as_a_dry_run_in_a_bare_checkout(argv: list[str], bare: Path) -> None:
    assert_dry_run(argv, bare)


def github_anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r"`", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_anchor_names_a_heading(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    body = re.sub(r"```.*?```", "", text, flags=re.S)
    anchors = {github_anchor(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", body, flags=re.M)}
    links = re.findall(r"\]\(#([^)]+)\)", body)
    missing = sorted({link for link in links if link not in anchors})
    assert not missing, f"{page.name} links without a heading: {missing}"


def test_the_pages_link_to_their_own_sections() -> None:
    assert any(re.search(r"\]\(#[^)]+\)", page.read_text(encoding="utf-8")) for page in PAGES)


# What the repository lacks: a specification document, numbered "reference"
# sections, a fact sheet of the reference launcher (the public sources are named
# instead: the Primus docs' pages, the upstream runner at a commit). The words are
# built from parts so that this file does not cite them itself.
_SPEC, _SECTION, _SHEET = "S" + "PEC", "\u00a7", "behaviour" + " sheet"
_CITATION = re.compile(rf"\b{_SPEC}( sections?| {_SECTION}|\s+\d)|\breference (section|{_SECTION}|\d)|{_SHEET}")


def _executables() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "runner", "bench", "examples", "tests/lint.sh"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [name for name in listed if os.access(ROOT / name, os.X_OK) and (ROOT / name).is_file()
            and (ROOT / name).read_bytes().startswith(b"#!")
            and b"primus_usage" in (ROOT / name).read_bytes()]  # the ones with a --help


def _help_of(argv: list[str]) -> str:
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
                          stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT / "python")})
    return done.stdout + done.stderr


def _python_commands() -> list[str]:
    from primus_runner.cli import COMMANDS

    return sorted(COMMANDS)


def _cited(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if _CITATION.search(line)]


def test_the_help_of_every_executable_cites_no_missing_document() -> None:
    found = {}
    names = _executables()
    assert "runner/primus-cli" in names and "runner/primus-cli-direct.sh" in names
    for name in names:
        cited = _cited(_help_of([str(ROOT / name), "--help"]))
        if cited:
            found[name] = cited
    loader = _help_of(["bash", "-c", 'source runner/helpers/envs/primus-env.sh --help'])
    assert "environment layer loader" in loader  # help, not the layers
    if _cited(loader):
        found["source primus-env.sh --help"] = _cited(loader)
    assert not found, f"help texts citing documents the repository lacks: {found}"


@pytest.mark.parametrize("command", _python_commands())
def test_python_help_is_plain_text_citing_no_missing_document(command: str) -> None:
    text = _help_of([str(ROOT / ".venv" / "bin" / "python"), "-m", "primus_runner", command, "--help"])
    assert "usage:" in text or "Usage" in text
    assert "``" not in text, f"raw reStructuredText in `{command} --help`"
    assert not _cited(text)


def test_env_explain_of_every_variable_cites_no_missing_document(capsys: pytest.CaptureFixture[str]) -> None:
    from primus_runner.env import commands as env_cmd
    from primus_runner.env.registry import load

    for var in load().variables:
        assert env_cmd.cmd_explain(var.name) == 0
    text = capsys.readouterr().out
    assert "GPUS_PER_NODE" in text
    assert not _cited(text), _cited(text)[:10]
    assert not _cited((ROOT / "docs" / "environment.md").read_text(encoding="utf-8"))


def _explain(name: str) -> str:
    return _help_of([str(ROOT / "runner" / "primus-cli"), "env", "explain", name])


def test_help_says_what_the_code_does() -> None:
    gpus = _explain("GPUS_PER_NODE")
    assert "default:     8" not in gpus and "1 on a host without accelerator" in gpus
    assert "validation.sh" not in _explain("MASTER_PORT")
    assert "rules/distributed.py" in _explain("MASTER_PORT")
    hca = _explain("NCCL_IB_HCA")
    assert "detected by runner/helpers/envs/get_nccl_ib_hca.sh" not in hca and "network/hca.py" in hca
    for mask in ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"):
        scope = next(line for line in _explain(mask).splitlines() if line.strip().startswith("scope:"))
        assert "subnet" not in scope and "GID" not in scope, scope
    assert "subnet" in next(line for line in _explain("NCCL_SOCKET_IFNAME").splitlines() if "scope:" in line)
    direct = _help_of([str(ROOT / "runner" / "primus-cli"), "direct", "--help"])
    assert "-m torch.distributed.run" not in direct and "torchrun_quiet.py" in direct
    shown = _help_of([str(ROOT / "runner" / "primus-cli"), "config", "show"])
    line = next(line for line in shown.splitlines() if line.startswith("direct.gpus_per_node"))
    assert "a launch uses the detected count instead" in line
