"""Facts once: the exit codes, the GPU-model list, the Neuron
family tables (Python only), the distributed fallbacks and every rule are defined in one place
(the registry's shared_facts / neuron sections, read through the generated
python/primus_runner/facts.py and runner/lib/facts.sh; one @rule per id). These
tests scan the sources for a second, literal copy outside the owner.
"""
from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import yaml

from primus_runner import facts
from primus_runner.env import registry

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "primus_runner"
GENERATED = {PACKAGE / "facts.py", ROOT / "runner" / "lib" / "facts.sh"}
DIST = ("MASTER_ADDR", "MASTER_PORT", "NNODES", "NODE_RANK", "GPUS_PER_NODE")
# The fallbacks that are choices; NODE_RANK 0 and NNODES 1 are also how the code
# reads "unset" as "a single node" (${NODE_RANK:-0}), which is not a copy.
CHOSEN = ("MASTER_ADDR", "MASTER_PORT", "GPUS_PER_NODE")


def python_sources() -> list[Path]:
    files = list(PACKAGE.rglob("*.py")) + list((ROOT / "runner").rglob("*.py"))
    return sorted(f for f in files if f not in GENERATED)


def shell_sources() -> list[Path]:
    runner = ROOT / "runner"
    files = list(runner.rglob("*.sh")) + [p for p in runner.glob("primus-cli*") if p.is_file()]
    return sorted(f for f in files if f not in GENERATED)


def shell_code_lines(path: Path) -> list[tuple[int, str]]:
    out = []
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        code = line.split(" #", 1)[0] if not line.lstrip().startswith("#") else ""
        if code.strip():
            out.append((number, code))
    return out


def _constants(node: ast.AST) -> list[object]:
    elts = getattr(node, "elts", [])
    return [e.value for e in elts if isinstance(e, ast.Constant)]


def python_copies() -> list[str]:
    models = set(facts.GPU_MODELS)
    defaults = facts.DISTRIBUTED_DEFAULTS
    chosen = {defaults[n] for n in CHOSEN} | {int(defaults[n]) for n in CHOSEN if defaults[n].isdigit()}
    found = []
    for path in python_sources():
        tree = ast.parse(path.read_text(), str(path))
        where = path.relative_to(ROOT)
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, int):
                for target in node.targets:
                    if isinstance(target, ast.Name) and re.fullmatch(r"(HOOK_)?EXIT_[A-Z]+", target.id):
                        found.append(f"{where}:{node.lineno}: exit code {target.id} = {node.value.value}")
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and models <= set(_constants(node)):
                found.append(f"{where}:{node.lineno}: the GPU-model list")
            if isinstance(node, ast.Dict):
                keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
                pairs = {(k.value, v.value) for k, v in zip(node.keys, node.values, strict=True)
                         if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)}
                if {("MASTER_ADDR", defaults["MASTER_ADDR"]), ("MASTER_PORT", defaults["MASTER_PORT"])} <= pairs:
                    found.append(f"{where}:{node.lineno}: a table of distributed defaults")
                if {"trn1", "trn2"} <= keys:
                    found.append(f"{where}:{node.lineno}: a Neuron family table")
            if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
                text = ast.unparse(node)
                if re.search(r"get\('(" + "|".join(CHOSEN) + r")'\)", text) and any(
                        isinstance(v, ast.Constant) and v.value in chosen for v in node.values):
                    found.append(f"{where}:{node.lineno}: a literal distributed fallback ({text})")
    return found


def shell_copies() -> list[str]:
    defaults = facts.DISTRIBUTED_DEFAULTS
    fallback = re.compile(r"\b(" + "|".join(CHOSEN) + r")(:-|\s+)(" +
                          "|".join(re.escape(defaults[n]) for n in CHOSEN) + r")\b")
    data = yaml.safe_load((PACKAGE / "data" / "variables.yaml").read_text())
    specs = {name: spec for section in data["sections"] for name, spec in section["variables"].items()}
    registry_fallback = re.compile(r"\b(" + "|".join(
        re.escape(n) + r":-" + re.escape(str(specs[n]["default"]))
        for n in data["shared_facts"]["shell_defaults"]) + r")\b")
    patterns = {
        "a literal registry default": registry_fallback,
        "exit code": re.compile(r"\b(HOOK_|PRIMUS_)?EXIT_[A-Z]+=[0-9]"),
        "the GPU-model list": re.compile(r"MI300X\s*\|?\s*MI325X"),
        "a Neuron family table": re.compile(r"\b(trn|inf)[0-9]\*\s*\|"),
        "a literal distributed fallback": fallback,
    }
    found = []
    for path in shell_sources():
        for number, code in shell_code_lines(path):
            for what, pattern in patterns.items():
                if pattern.search(code):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {what}: {code.strip()}")
    return found


def test_no_exit_code_gpu_list_neuron_table_or_fallback_is_copied_in_python():
    assert python_copies() == []


def test_no_exit_code_gpu_list_neuron_table_or_fallback_is_copied_in_bash():
    assert shell_copies() == []


def test_the_scan_finds_a_copy_when_there_is_one(tmp_path, monkeypatch):
    """The scanners are not vacuous: a planted copy of each kind is reported."""
    bad_sh = tmp_path / "bad.sh"
    bad_sh.write_text("PRIMUS_EXIT_MISSING=1\ncase $m in MI300X | MI325X) ;; esac\n"
                      "case $i in trn1* | inf2*) ;; esac\nx=${MASTER_PORT:-1234}\n# MASTER_PORT 1234\n"
                      "g=${PRIMUS_KILL_GRACE:-10}\n")
    bad_py = tmp_path / "bad.py"
    bad_py.write_text('EXIT_MISSING = 66\nM = ("MI300X", "MI325X", "MI355X")\n'
                      'D = {"MASTER_ADDR": "localhost", "MASTER_PORT": "1234"}\nT = {"trn1": 1, "trn2": 2}\n'
                      'p = env.get("MASTER_PORT") or 1234\n')
    monkeypatch.setattr(__import__(__name__), "shell_sources", lambda: [bad_sh])
    monkeypatch.setattr(__import__(__name__), "python_sources", lambda: [bad_py])
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert len(shell_copies()) == 5
    assert len(python_copies()) == 5


def test_every_rule_is_defined_once():
    ids = []
    for path in sorted((PACKAGE / "env" / "rules").glob("*.py")):
        ids += re.findall(r'^@rule\("([a-z0-9_]+)"\)', path.read_text(), re.MULTILINE)
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
    text = (PACKAGE / "data" / "variables.yaml").read_text().split("\nrules:\n", 1)[1]
    documented = re.findall(r"^  ([a-z0-9_]+):\s*$", text, re.MULTILINE)
    assert len(documented) == len(set(documented))
    assert set(documented) == set(ids)


def test_the_registry_reads_its_copies_from_shared_facts():
    reg = registry.load()
    data = yaml.safe_load((PACKAGE / "data" / "variables.yaml").read_text())
    specs = {name: spec for section in data["sections"] for name, spec in section["variables"].items()}
    for name in DIST:
        assert "launcher_default" not in specs[name], name       # not written twice
        assert reg.get(name).launcher_default == facts.DISTRIBUTED_DEFAULTS[name]
    assert reg.get("PRIMUS_GPU_MODEL").values == facts.GPU_MODELS      # a YAML alias
    from primus_runner import errors
    from primus_runner.hardware import devices
    from primus_runner.scheduler import variables as schedulers

    assert devices.GPU_MODELS is facts.GPU_MODELS
    assert schedulers.BUILTIN_DEFAULTS == facts.DISTRIBUTED_DEFAULTS
    assert (errors.EXIT_MISSING, errors.MissingError.exit_code) == (1, 1)   # docs/exit-codes.md "The exit-code table"


def test_the_system_config_file_agrees_with_the_fallbacks():
    """runner/.primus.yaml is the user-facing lowest config layer (docs/configuration.md "Configuration"),
    documented there for editing; it must say what the launcher falls back to."""
    direct = yaml.safe_load((ROOT / "runner" / ".primus.yaml").read_text())["direct"]
    assert {name: str(direct[name.lower()]) for name in DIST} == facts.DISTRIBUTED_DEFAULTS


def test_bash_sees_the_same_facts():
    script = ('source runner/lib/common.sh; echo "$PRIMUS_EXIT_MISSING $PRIMUS_HOOK_EXIT_CONFIG '
              '${PRIMUS_DISTRIBUTED_DEFAULTS[MASTER_PORT]} ${PRIMUS_GPU_MODELS[*]}"')
    out = subprocess.run(["bash", "--norc", "-c", script], cwd=ROOT, capture_output=True, text=True,
                         check=True, env={"PATH": "/usr/bin:/bin", "PRIMUS_LOG_COLOR": "0"}).stdout
    assert out.split() == [str(facts.EXIT_MISSING), str(facts.HOOK_EXIT_CONFIG),
                           facts.DISTRIBUTED_DEFAULTS["MASTER_PORT"], *facts.GPU_MODELS]
    # The Neuron tables are Python's alone (the Neuron layer's decision asks them):
    # tests/python/test_bash_decides_nothing.py scans bash for a copy.


def test_the_early_checked_bounds_and_shell_defaults_are_the_registrys():
    """facts.py CHECKED_BEFORE_VERDICT and facts.sh PRIMUS_REGISTRY_DEFAULTS carry
    the registry's own default, min and max (read here through the registry)."""
    reg = registry.load()
    for name, (default, low, high) in facts.CHECKED_BEFORE_VERDICT.items():
        var = reg.get(name)
        assert (default, low, high) == (var.default, var.min, var.max), name
        assert var.type in ("uint", "seconds"), name
    text = (ROOT / "runner" / "lib" / "facts.sh").read_text()
    line = next(x for x in text.splitlines() if x.startswith("declare -gA PRIMUS_REGISTRY_DEFAULTS="))
    pairs = dict(re.findall(r"\[([A-Z_]+)\]=([^ )]+)", line))
    assert pairs and all(pairs[n] == reg.get(n).default for n in pairs), pairs
