"""docs/coming-from-upstream.md holds what the code does.

The page's Options table names every option of upstream's ``primus-cli``,
``primus-cli direct|slurm|container --help`` with a verdict. Each option the page
calls "same" must be accepted here: it runs under ``--dry-run`` (nothing starts;
a container dry run never calls the runtime) and exits 0 without a usage error.
A placeholder word (FILE, PATH, NAME, IMAGE) the test does not know fails the
test, so a row added to the table is never skipped silently.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "coming-from-upstream.md"
CLI = str(ROOT / "runner" / "primus-cli")
WORKLOAD = ["--module", "primus_runner", "--", "preflight"]
# Words of the Option column that stand for a value the user gives.
PLACEHOLDERS = {"FILE", "PATH", "NAME", "IMAGE", "DIR", "N", "PID", "JOBID", "VALUE", "MODE"}


def option_rows() -> list[tuple[str, str, str]]:
    """(scope, option text, verdict) of every row of the Options table."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("## Options", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or cells[0] in ("Scope", "") or set(cells[0]) <= {"-"}:
            continue
        match = re.fullmatch(r"`([^`]+)`", cells[1])
        assert match, f"Options row without a `code` option: {line}"
        rows.append((cells[0], match.group(1), cells[2]))
    return rows


SAME = [(scope, option) for scope, option, verdict in option_rows() if verdict == "same"]


def _values(option: str, work: Path) -> list[str]:
    """The option's words with each placeholder replaced by a real value."""
    words = option.split()
    name = words[0]
    files = {
        "--config": work / "job.yaml",
        "--script": work / "train.py",
        "--patch": work / "patch.sh",
        "--env": work / "job.env",
    }
    out = [name]
    for word in words[1:]:
        if word == "FILE" and name in files:
            out.append(str(files[name]))
        elif word == "PATH" and name == "--log_file":
            out.append(str(work / "logs" / "train.log"))
        elif word in ("NAME", "IMAGE"):
            out.append("job-x" if word == "NAME" else "img")
        elif word in PLACEHOLDERS:
            raise AssertionError(f"{option}: placeholder {word} unknown to this test; give it a value")
        else:
            out.append(word)
    return out


def _command(scope: str, option: str, work: Path) -> list[str]:
    words = _values(option, work)
    if scope == "global":
        if words[0] in ("--version", "--help"):
            return [CLI, *words]
        rest = [] if words[0] == "--dry-run" else ["--dry-run"]
        return [CLI, *rest, *words, "direct", *WORKLOAD]
    if scope == "direct":
        if words[0] == "--help":
            return [CLI, "direct", "--help"]
        tail = [] if words[0] == "--script" else ["--module", "primus_runner"]
        return [CLI, "--dry-run", "direct", *words, *tail, "--", "preflight"]
    if scope == "slurm":
        if words[0] in ("srun", "sbatch"):
            return [CLI, "--dry-run", "slurm", *words, "-N", "1", "--", "direct", *WORKLOAD]
        return [CLI, "--dry-run", "slurm", *words, "srun", "-N", "1", "--", "direct", *WORKLOAD]
    if scope == "container":
        if words[0] == "--help":
            return [CLI, "container", "--help"]
        return [CLI, "--dry-run", "container", "--runtime", "docker", *words, "--", "preflight"]
    raise AssertionError(f"unknown scope {scope!r} in the Options table")


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("compat")
    (base / "job.yaml").write_text("direct:\n  numa: \"auto\"\n")
    (base / "train.py").write_text("print('train')\n")
    (base / "patch.sh").write_text("#!/bin/bash\nexit 0\n")
    (base / "job.env").write_text("A=1\nB=\"$A/x\"\n")
    (base / "stub").mkdir()
    (base / "data").mkdir()
    return base


def _env(work: Path) -> dict[str, str]:
    return {
        "PATH": f"{ROOT / 'tests' / 'fixtures' / 'stubs'}:{ROOT / '.venv' / 'bin'}:/usr/bin:/bin",
        "HOME": str(work), "PRIMUS_WORKSPACE": str(work / "ws"), "PRIMUS_LOG_COLOR": "0",
        "PRIMUS_ACCELERATOR": "cpu", "PRIMUS_WORKLOAD_PYTHON": str(ROOT / ".venv" / "bin" / "python"),
        "STUB_RECORD_DIR": str(work / "stub"), "MASTER_PORT": "auto",
    }


def test_the_table_names_every_mode_scope_and_many_options() -> None:
    scopes = {scope for scope, _ in SAME}
    assert scopes == {"global", "direct", "slurm", "container"}
    assert len(SAME) >= 30


@pytest.mark.parametrize(("scope", "option"), SAME, ids=[f"{s} {o}" for s, o in SAME])
def test_every_option_called_same_is_accepted(scope: str, option: str, work: Path) -> None:
    argv = _command(scope, option, work)
    done = subprocess.run(argv, cwd=work, env=_env(work), capture_output=True, text=True, timeout=120)
    both = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(argv)} exited {done.returncode}:\n{both}"
    assert "unknown option" not in both and "did you mean" not in both, both
    assert not (work / "stub" / "args.nul").exists(), "a dry run called the container runtime"


def test_a_row_naming_an_option_that_does_not_exist_would_fail(work: Path) -> None:
    """The check above can fail: an option this launcher lacks is refused (exit 2)."""
    argv = _command("direct", "--no-such-option", work)
    done = subprocess.run(argv, cwd=work, env=_env(work), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--no-such-option" in done.stderr


# Upstream's shipped runner/.primus.yaml (AMD-AGI/Primus fd1eeabb; the behaviour
# sheet's section 9): every value is ours too, or the page has a "differs because"
# row naming the key and upstream's value.
UPSTREAM_DEFAULTS: dict[tuple[str, str], list[str]] = {
    ("container", "ipc"): ["host"], ("container", "network"): ["host"],
    ("container", "privileged"): ["true"], ("container", "security-opt"): ["seccomp=unconfined"],
    ("container", "group-add"): ["video"], ("container", "ulimit"): ["nofile=1048576:1048576"],
    ("container", "cap-add"): ["SYS_PTRACE", "CAP_SYS_ADMIN"], ("container", "image"): ["rocm/primus:v26.5"],
    ("slurm", "nodes"): ["1"], ("slurm", "time"): ["4:00:00"],
}


def _ours(section: str, key: str) -> list[str]:
    from primus_runner.config import files as cfgmod

    path = ROOT / "runner" / ".primus.yaml"
    data = cfgmod.parse_yaml(path.read_text(encoding="utf-8"), str(path))
    where = data[section]["options"] if section == "container" else data[section]
    value = where.get(key, where.get(key.replace("-", "_")))
    values = value if isinstance(value, list) else [value]
    return ["true" if v is True else str(v) for v in values if v not in (None, "", False)]


def test_every_upstream_default_is_ours_or_listed_with_its_reason() -> None:
    rows = [line for line in PAGE.read_text(encoding="utf-8").splitlines() if "| differs because" in line]
    missing = []
    for (section, key), values in UPSTREAM_DEFAULTS.items():
        ours = _ours(section, key)
        for value in values:
            if value in ours:
                continue
            if not any(key.split("-")[0] in row and value in row for row in rows):
                missing.append(f"{section}.{key}: upstream {value!r}, ours {ours}")
    assert not missing, "defaults that differ from upstream's without a 'differs because' row:\n" + "\n".join(missing)
