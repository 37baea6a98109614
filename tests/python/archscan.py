"""The reader behind tests/python/test_architecture.py: it reads a source tree (the
repository, or a made-up tree under tmp_path) and returns what breaks the house rules.

Every check is a function of the tree's root that returns a list of breaches (empty
when the tree keeps the rule), so the same code judges the real tree and the breach
fixtures of tests/python/test_architecture_breaches.py.

An import is any of: ``import``/``from ... import`` (relative too, inside functions
and under ``TYPE_CHECKING``), ``importlib.import_module``/``__import__``/
``runpy.run_module`` with a literal name (an f-string whose literal head ends in a
dot names every module of that package), and a ``-m primus_runner.X`` or
``from primus_runner.X import`` written in a string (an argv list, a shell command,
``python -c`` code). Bash files are found by name (``.sh``, ``.bash``), by their
shebang, or by a ``# shellcheck shell=bash`` first line; the modules they name with
``-m`` or ``python -c`` code must exist and be runnable.
"""
from __future__ import annotations

import ast
import functools
import itertools
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

MAX_LINES = 400
PKG_NAME = "primus_runner"
_CALLS = {"import_module", "__import__", "run_module"}
_MOD = r"primus_runner(?:\.[A-Za-z_]\w*)*"
_STRING_IMPORT = re.compile(r"(?:(?:^|[\s'\"\[(])-m\s+|\bfrom\s+|\bimport\s+)(" + _MOD + r")")
_BASH_FIRST = re.compile(r"^#!.*\b(ba)?sh\b|^# shellcheck shell=(ba)?sh")


def package(root: Path) -> Path:
    return root / "python" / PKG_NAME


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root / "python").with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def exists(root: Path, module: str) -> bool:
    parts = module.split(".")
    if parts[0] != PKG_NAME:
        return False
    base = package(root).joinpath(*parts[1:])
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _is_package(root: Path, module: str) -> bool:
    return (package(root).joinpath(*module.split(".")[1:]) / "__init__.py").is_file()


def _submodules(root: Path, prefix: str) -> set[str]:
    """Every module under package ``prefix`` (its name without the trailing dot)."""
    base = package(root).joinpath(*prefix.split(".")[1:])
    return {module_name(root, p) for p in base.rglob("*.py")} - {prefix} if base.is_dir() else set()


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            out.add(id(body[0].value))
    return out


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _literal_head(node: ast.AST) -> tuple[str, bool] | None:
    """A call argument's literal text and whether it is all of it."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value, True
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return str(node.values[0].value), False
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        head = _literal_head(node.left)
        return (head[0], False) if head else None
    return None


def _named_by_call(root: Path, node: ast.Call, name: str, is_pkg: bool) -> set[str]:
    if _call_name(node) not in _CALLS or not node.args:
        return set()
    head = _literal_head(node.args[0])
    if head is None:
        return set()
    text, whole = head
    if text.startswith("."):  # import_module("..x", __package__)
        level = len(text) - len(text.lstrip("."))
        own = (name if is_pkg else name.rsplit(".", 1)[0]).split(".")
        text = ".".join(own[: len(own) - (level - 1)] + [t for t in [text.lstrip(".")] if t])
    if not text.startswith(PKG_NAME):
        return set()
    if whole:
        return {text}
    if text.endswith("."):
        return _submodules(root, text[:-1]) or {text[:-1]}
    return {text.rsplit(".", 1)[0]}


_PROCESS_CALLS = {"run", "Popen", "call", "check_call", "check_output", "system", "getoutput",
                  "getstatusoutput", "execv", "execvp", "execve", "execvpe", "spawnv", "spawnvp"}


def _strings(node: ast.AST) -> Iterator[str]:
    """The literal text of an argument: a string, an f-string's literal parts,
    the items of a list or tuple."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.JoinedStr):
        yield "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    elif isinstance(node, (ast.List, ast.Tuple)):
        for elt in node.elts:
            yield from _strings(elt)
    elif isinstance(node, ast.BinOp):
        yield from _strings(node.left)
        yield from _strings(node.right)


def _run_in_strings(node: ast.AST) -> set[str]:
    """Modules a string starts: an argv list's ``-m MODULE`` or ``-c CODE``, and
    a command or code string handed to a process call (subprocess, os.system, exec)."""
    found: set[str] = set()
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
        for flag, target in itertools.pairwise(items):
            if flag == "-m" and isinstance(target, str) and re.fullmatch(_MOD, target):
                found.add(target)
            elif flag == "-c" and isinstance(target, str):
                found.update(_STRING_IMPORT.findall(target))
    if isinstance(node, ast.Call) and _call_name(node) in _PROCESS_CALLS:
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            for text in _strings(arg):
                found.update(_STRING_IMPORT.findall(text))
    return found


def _prose_runs(node: ast.AST, docstrings: set[int]) -> set[str]:
    """Modules a string tells a reader to run (``python3 -m primus_runner.X`` in a
    usage line, a fix, a note): they must exist and run, but are no import."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
        return set(re.findall(r"-m\s+(" + _MOD + r")", node.value))
    return set()


def named_modules(root: Path, path: Path, name: str = "") -> set[str]:
    """Every primus_runner module the Python file ``path`` names, by every form,
    as written (a name imported from a package resolves to its submodule when
    there is one). ``name`` is the file's module name (relative imports)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    is_pkg = path.name == "__init__.py"
    docstrings = _docstrings(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == PKG_NAME)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                if not is_pkg:
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] != PKG_NAME:
                continue
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                found.add(sub if exists(root, sub) else module)
        elif isinstance(node, ast.Call):
            found |= _named_by_call(root, node, name, is_pkg)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings \
                and re.fullmatch(_MOD, node.value):
            found.add(node.value)  # a table of modules to import by name (cli.py's commands)
        found |= _run_in_strings(node)
    return found


def package_files(root: Path) -> Iterator[tuple[str, Path]]:
    for path in sorted(package(root).rglob("*.py")):
        yield module_name(root, path), path


@functools.cache
def graph(root: Path) -> dict[str, set[str]]:
    """Module -> the package modules it imports (itself left out); read once per tree."""
    return {name: {m for m in named_modules(root, path, name) if exists(root, m)} - {name}
            for name, path in package_files(root)}


def floor(module: str, floors: dict[str, int]) -> int:
    parts = module.split(".")[1:]
    for end in range(len(parts), 0, -1):
        key = ".".join(parts[:end])
        if key in floors:
            return floors[key]
    key = parts[0] if parts else ""
    if key not in floors:
        raise KeyError(f"{module}: its room '{key}' has no floor in FLOORS; add it")
    return floors[key]


def cycles(deps: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan). A package's
    ``__init__`` is a module like any other: a circle through it is a circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(deps.get(v, ())):
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

    for v in sorted(deps):
        if v not in index:
            visit(v)
    return out


def circles(root: Path) -> list[str]:
    return [" <-> ".join(c) for c in cycles(graph(root))]


def upward(root: Path, floors: dict[str, int]) -> list[str]:
    return [f"{m} (floor {floor(m, floors)}) imports {d} (floor {floor(d, floors)})"
            for m, deps in graph(root).items() for d in sorted(deps) if floor(d, floors) > floor(m, floors)]


def unread(root: Path) -> list[str]:
    """The reader saw the imports: a package that has modules beyond its base has
    at least one import arrow for every two modules (an empty import list is a broken reader)."""
    deps = graph(root)
    arrows = sum(len(d) for d in deps.values())
    return [] if 2 * arrows >= len(deps) else [f"{arrows} import arrows among {len(deps)} modules"]


def sources(root: Path) -> list[Path]:
    """The files under runner/ and python/ (git's view when root is a checkout:
    tracked and untracked, ignored ones left out)."""
    if (root / ".git").exists():
        out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "runner", "python"],
                             cwd=root, capture_output=True, text=True, check=True).stdout
        paths = [root / line for line in out.splitlines()]
    else:
        paths = [p for top in ("runner", "python") for p in (root / top).rglob("*")]
    return sorted(p for p in paths if p.is_file() and "__pycache__" not in p.parts)


def is_bash(path: Path) -> bool:
    if path.suffix in (".sh", ".bash"):
        return True
    try:
        with path.open("rb") as handle:
            first = handle.readline(200).decode("utf-8", "replace")
    except OSError:
        return False
    return bool(_BASH_FIRST.match(first))


def bash_files(root: Path) -> list[Path]:
    return [p for p in sources(root) if is_bash(p)]


def code_files(root: Path) -> list[Path]:
    """Every file the size and opening-comment rules judge: Python and bash."""
    return [p for p in sources(root) if "/data/" not in p.as_posix() and (p.suffix == ".py" or is_bash(p))]


def too_long(root: Path, limit: int = MAX_LINES) -> list[str]:
    return [f"{p.relative_to(root)}: {n} lines" for p in code_files(root)
            if (n := len(p.read_text(encoding="utf-8", errors="replace").splitlines())) > limit]


def bare_scripts(root: Path) -> list[str]:
    bare = []
    for path in bash_files(root):
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        head = [ln for ln in lines[:6] if ln.startswith("#") and not ln.startswith(("#!", "# shellcheck"))]
        if len(" ".join(head).split()) < 6:
            bare.append(str(path.relative_to(root)))
    return bare


def _runnable(root: Path, module: str) -> bool:
    base = package(root).joinpath(*module.split(".")[1:])
    if _is_package(root, module):
        return (base / "__main__.py").is_file()
    return "__main__" in base.with_suffix(".py").read_text(encoding="utf-8")


def dangling(root: Path) -> list[str]:
    """Modules named from outside the package's own import graph that do not exist
    (or, run with ``-m``, would do nothing): in bash files (``-m`` and ``python -c``
    code) and in Python files outside the package; and every ``-m`` target in the
    package's own strings."""
    out = []
    for path in bash_files(root):
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            for match in re.finditer(r"(-m\s+)?\b(" + _MOD + r")\b", line):
                run, module = match.group(1), match.group(2)
                if not (run or re.search(r"\b(from|import)\s+" + re.escape(module), line)):
                    continue
                where = f"{path.relative_to(root)}:{number}: {module}"
                if not exists(root, module):
                    out.append(f"{where} does not exist")
                elif run and not _runnable(root, module):
                    out.append(f"{where} has no __main__ to run with -m")
    for path in sources(root):
        if path.suffix != ".py":
            continue
        inside = package(root) in path.parents
        name = module_name(root, path) if inside else ""
        text = path.read_text(encoding="utf-8", errors="replace")
        tree = ast.parse(text, str(path))
        docstrings = _docstrings(tree)
        run = {m for node in ast.walk(tree) for m in _prose_runs(node, docstrings) | _run_in_strings(node)}
        named = run if inside else named_modules(root, path, name) | run
        for module in sorted(named):
            where = f"{path.relative_to(root)}: {module}"
            if not exists(root, module):
                out.append(f"{where} does not exist")
            elif module in run and re.search(r"-m\W+" + re.escape(module) + r"\b", text) \
                    and not _runnable(root, module):
                out.append(f"{where} has no __main__ to run with -m")
    return out
