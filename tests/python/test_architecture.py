"""The house rules of the code (issue 24), checked from the code itself.

- The Python package's import graph (read with ``ast``: every import statement,
  also those inside functions and under ``TYPE_CHECKING``) has no circle, and no
  module imports from a floor above its own (``FLOORS``).
- No source file under ``runner/`` or ``python/`` is over 400 lines.
- Every repository path that ``docs/architecture.md`` names exists, and the README
  links to the page.
- Every module of the package and every shell script under ``runner/`` opens with a
  comment saying what it owns.
"""
from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "python" / "primus_runner"
MAX_LINES = 400

# Floors, lowest first: a module may import from its own floor or below. The key
# is the longest leading part of the module's name under primus_runner that the
# table holds ("" = __init__): a package's floor, or one module's own.
FLOORS: dict[str, int] = {
    # 0: the base every room stands on: errors, records, generated facts, the
    # value grammar, shell quoting, masking, the log, the registry's data file
    # and the texts a user reads (help without markup, "did you mean").
    "": 0, "errors": 0, "records": 0, "facts": 0, "grammar": 0, "shellfmt": 0,
    "masking": 0, "log": 0, "registry_data": 0, "usertext": 0, "yamlload": 0, "sitepaths": 0,
    # 1: readers of this host, of the scheduler's variables and of the config files.
    "hardware": 1, "network": 1, "config": 1,
    "cluster.hostlist": 1, "cluster.schedulers": 1,
    # 2: the variable registry and its rules (they ask hardware and network).
    "env": 2,
    # 3: the cluster around the host (rank mapping asks the rules).
    "cluster": 3,
    # 4: one launch, and the workloads it can run.
    "launch": 4, "dataprep": 4, "workload": 4,
    # 5: diagnosis of running launches and of the fleet (they run the launch's checks).
    "diagnose": 5, "doctor": 5, "monitor": 5,
    # 6: the command-line face.
    "cli": 6, "__main__": 6,
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, name: str) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "primus_runner")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                if not is_pkg:
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] != "primus_runner":
                continue
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                found.add(sub if _exists(sub) else module)
    found.discard(name)
    return found


def _exists(module: str) -> bool:
    rel = Path(*module.split(".")[1:])
    return (PKG / rel).with_suffix(".py").is_file() or (PKG / rel / "__init__.py").is_file()


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted(PKG.rglob("*.py")):
        name = _module_name(path)
        graph[name] = {m for m in _imports(path, name) if _exists(m)}
    return graph


def _floor(module: str) -> int:
    parts = module.split(".")[1:]
    for end in range(len(parts), 0, -1):
        key = ".".join(parts[:end])
        if key in FLOORS:
            return FLOORS[key]
    key = parts[0] if parts else ""
    if key not in FLOORS:
        raise AssertionError(f"{module}: its room '{key}' has no floor in FLOORS; add it")
    return FLOORS[key]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _parent_package(module: str) -> str:
    return module.rsplit(".", 1)[0]


def test_no_import_circle() -> None:
    graph = _graph()
    # A package's __init__ importing its own modules is its face, not a circle.
    pruned = {m: {d for d in deps if not (m.count(".") and _parent_package(d) == m)}
              for m, deps in graph.items()}
    circles = _cycles(pruned)
    assert not circles, "import circles: " + "; ".join(" <-> ".join(c) for c in circles)


def test_no_import_runs_back_up() -> None:
    bad = [f"{m} (floor {_floor(m)}) imports {d} (floor {_floor(d)})"
           for m, deps in _graph().items() for d in sorted(deps) if _floor(d) > _floor(m)]
    assert not bad, "imports that run back up:\n" + "\n".join(bad)


def test_every_room_has_a_floor() -> None:
    for module in _graph():
        _floor(module)


def test_the_graph_reader_sees_imports_that_would_break_the_rules() -> None:
    """The checks above can fail: a made-up module importing upward is caught."""
    sample = ast.parse("from primus_runner.launch import helper\n")
    assert any(isinstance(n, ast.ImportFrom) for n in ast.walk(sample))
    assert _cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b"]]
    assert _floor("primus_runner.hardware.devices") < _floor("primus_runner.launch.helper")
    assert _floor("primus_runner.cluster.schedulers") < _floor("primus_runner.cluster.ranks")


def _tracked_sources() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "runner", "python"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    files = []
    for line in out.splitlines():
        path = ROOT / line
        if not path.is_file() or "/data/" in line:
            continue
        if path.suffix in (".py", ".sh", ".bash") or line == "runner/primus-cli":
            files.append(path)
    return files


def test_no_source_file_over_400_lines() -> None:
    sources = _tracked_sources()
    assert len(sources) > 50
    long = [f"{p.relative_to(ROOT)}: {n} lines" for p in sources
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES]
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
    bare = []
    for path in _tracked_sources():
        if path.suffix == ".py":
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        head = [ln for ln in lines[:6] if ln.startswith("#") and not ln.startswith(("#!", "# shellcheck"))]
        if len(" ".join(head).split()) < 6:
            bare.append(str(path.relative_to(ROOT)))
    assert not bare, f"scripts without an opening comment: {bare}"
