"""The house rules of the code, checked from the code itself (the reader is
tests/python/archscan.py; tests/python/test_architecture_breaches.py shows each
check failing on a made-up tree that breaks it).

- The Python package's import graph has no circle (a package's ``__init__`` is a
  module like any other), and no module imports from a floor above its own
  (``FLOORS``). Every import form counts: ``import``/``from`` (relative, inside
  functions, under ``TYPE_CHECKING``), ``importlib.import_module``/``__import__`` of
  a literal name or f-string, a table of module names, and ``-m``/``-c`` in the
  argv or command string of a process call.
- Every module a bash file (found by its shebang) or a string names with ``-m`` or
  ``python -c`` code exists and, run with ``-m``, has a ``__main__``.
- No Python or bash file under ``runner/`` or ``python/`` is over 400 lines.
- Every repository path that ``docs/architecture.md`` names exists, and the README
  links to the page.
- Every module of the package and every bash file under ``runner/`` opens with a
  comment saying what it owns.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import archscan

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "python" / "primus_runner"

# Floors, lowest first: a module may import from its own floor or below. The key
# is a room: a package or a module directly under primus_runner ("" = __init__).
# A room stands on one floor: no key names a module inside a package, so no import
# runs back up to a module given a lower floor than its room
# (tests/python/test_one_of_each.py checks).
FLOORS: dict[str, int] = {
    # 0: the base every room stands on: errors, records, generated facts, the
    # value grammar, shell quoting, masking, the log, the registry's data file
    # and the texts a user reads (help without markup, "did you mean").
    "": 0, "errors": 0, "records": 0, "facts": 0, "grammar": 0, "shellfmt": 0,
    "masking": 0, "log": 0, "registry_data": 0, "usertext": 0, "yamlload": 0, "sitepaths": 0,
    "runrecord": 0,
    "procstat": 0,
    # 1: readers of this host, of the scheduler's variables and of the config files.
    "hardware": 1, "network": 1, "config": 1, "scheduler": 1,
    # 2: the variable registry and its rules (they ask hardware and network).
    "env": 2,
    # 3: the cluster around the host (rank mapping asks the rules).
    "cluster": 3,
    # 4: one launch, and the workloads it can run; a launch rendered for Kubernetes
    # (the renderer asks env's rules; the launch asks its pod side).
    "launch": 4, "dataprep": 4, "workload": 4, "k8s": 4,
    # 5: diagnosis of running launches and of the fleet (they run the launch's checks).
    "diagnose": 5, "doctor": 5, "monitor": 5, "report": 5,
    # 6: the command-line face.
    "cli": 6, "__main__": 6,
}


def test_no_import_circle() -> None:
    circles = archscan.circles(ROOT)
    assert not circles, "import circles: " + "; ".join(circles)


def test_no_import_runs_back_up() -> None:
    bad = archscan.upward(ROOT, FLOORS)
    assert not bad, "imports that run back up:\n" + "\n".join(bad)


def test_every_room_has_a_floor() -> None:
    for module in archscan.graph(ROOT):
        archscan.floor(module, FLOORS)


def test_the_reader_sees_every_import_form_the_tree_uses() -> None:
    """Not vacuous on the tree: the arrows a plain ``import`` hides are seen (cli.py's
    table of command modules, env.rules' importlib of its rule modules)."""
    graph = archscan.graph(ROOT)
    assert archscan.unread(ROOT) == []
    assert "primus_runner.launch.helper" in graph["primus_runner.cli"]
    assert "primus_runner.env.rules.neuron" in graph["primus_runner.env.rules"]
    assert archscan.floor("primus_runner.scheduler.variables", FLOORS) < archscan.floor(
        "primus_runner.cluster.ranks", FLOORS)


def test_every_module_named_from_bash_or_a_string_exists_and_runs() -> None:
    bad = archscan.dangling(ROOT)
    assert not bad, "modules named that do not exist or do not run:\n" + "\n".join(bad)


def test_bash_files_are_found_by_their_shebang() -> None:
    bash = {str(p.relative_to(ROOT)) for p in archscan.bash_files(ROOT)}
    assert len(bash) > 50
    assert "runner/primus-cli" in bash  # no .sh: found by its first line


def test_no_source_file_over_400_lines() -> None:
    assert len(archscan.code_files(ROOT)) > 150
    long = archscan.too_long(ROOT)
    assert not long, "files over 400 lines:\n" + "\n".join(long)


ARCH = ROOT / "docs" / "architecture.md"
_PATH_RE = re.compile(r"`((?:runner|python|tests|docs|examples|bench)/[^`\s]*)`")


def test_architecture_page_names_only_paths_that_exist() -> None:
    text = ARCH.read_text(encoding="utf-8")
    named = sorted(set(_PATH_RE.findall(text)))
    assert len(named) >= 30, "the page walks the launch through the files by path"
    missing = [p for p in named if not (ROOT / p.rstrip("/")).exists()]
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_architecture_page_names_every_package() -> None:
    text = ARCH.read_text(encoding="utf-8")
    packages = sorted(p.parent.name for p in PKG.glob("*/__init__.py"))
    missing = [p for p in packages if f"python/primus_runner/{p}/" not in text]
    assert missing == []


def test_readme_links_the_architecture_page() -> None:
    assert "(docs/architecture.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("path", sorted(PKG.rglob("*.py")), ids=lambda p: str(p.relative_to(PKG)))
def test_every_module_says_what_it_owns(path: Path) -> None:
    if path.name == "facts.py":  # generated; its docstring names its generator
        return
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    assert doc and len(doc.split()) >= 8, f"{path}: no opening docstring saying what it owns"


def test_every_shell_script_opens_with_a_comment() -> None:
    bare = archscan.bare_scripts(ROOT)
    assert not bare, f"scripts without an opening comment: {bare}"
