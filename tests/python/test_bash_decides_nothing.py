"""Bash decides nothing: the shell keeps no Neuron core
table and no NeuronCore arithmetic (launch/neuron_layer.py and
hardware/neuron_cores.py decide, neuron.sh and run_worker.sh only apply), and no
environment layer refuses anything (a refusal is a rule of the rules engine, named
by ``env check`` and ``env explain``). The JAX coordinator is decided in
launch/jax_layer.py only: no shell file names a JAX_COORDINATOR variable, copies
grammar.host_for_port's brackets, or compares NNODES in a layer or in the
workload step. The scans read the shell sources; a planted copy of the old bash
code shows that each scan finds what it looks for.
"""
from __future__ import annotations

import re
from pathlib import Path

from primus_runner import facts

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "runner"
ENVS = RUNNER / "helpers" / "envs"
# The files primus-env.sh sources as layers (the loader itself maps env check's
# verdict to its status; that is the rules engine's answer, not a rule).
LAYERS = ["base_env.sh", "neuron.sh", "jax_xla.sh", *(f"{model}.sh" for model in facts.GPU_MODELS)]

_ARITH = re.compile(r"\$?\(\((.*?)\)\)")
_EXPANSION = re.compile(r"\$\{#?([A-Za-z_][A-Za-z0-9_]*)[^}]*\}")
CHECKS = {
    # x * y / lnc, rank * per, count % k: the core arithmetic (expansions such as
    # ${K:-1} are read as their name first, so a default never looks like an operator).
    "NeuronCore arithmetic": lambda code: any(
        re.search(r"[*/%]", _EXPANSION.sub(r"\1", expr)) for expr in _ARITH.findall(code)),
    "a core slice taken by arithmetic": lambda code: bool(re.search(r"\[@\]:[^}]*[*]", code)),
    "a core-range parser": lambda code: bool(re.search(r"=~.*\)-\(", code)),
}
TABLES = re.compile(r"FAMILY_LNC|\[(trn|inf)[0-9]+\]=|\b(trn|inf)[0-9]\*\s*\|")
# The JAX coordinator's derivation (jax_xla.sh and workload.sh).
JAX_NAMES = re.compile(r"\bJAX_COORDINATOR_[A-Z]+")
HOST_BRACKETS = re.compile(r"\*:\*.*\"\[\$|\"\[\$.*\*:\*")
NNODES_COMPARED = re.compile(r"NNODES\b.*(>|<|-gt\b|-lt\b|-ge\b|-le\b)|(>|<|-gt|-lt|-ge|-le)\s*\$?\{?NNODES")
REFUSAL = re.compile(r"\bLOG_ERROR\b|\breturn\s+\"?\$?\{?(2\b|PRIMUS_EXIT_)|\bprimus_die\b|\bprimus_bad_usage\b")


def code_lines(path: Path) -> list[tuple[int, str]]:
    out = []
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        code = "" if line.lstrip().startswith("#") else line.split(" #", 1)[0]
        if code.strip():
            out.append((number, code))
    return out


def shell_sources() -> list[Path]:
    files = list(RUNNER.rglob("*.sh")) + [p for p in RUNNER.glob("primus-cli*") if p.is_file()]
    return sorted(f for f in files if f.name != "facts.sh" or f.parent.name != "lib")


def neuron_arithmetic(paths: list[Path]) -> list[str]:
    """Core arithmetic in a shell file that reads a Neuron variable."""
    found = []
    for path in paths:
        lines = code_lines(path)
        if not any("NEURON" in code for _, code in lines):
            continue
        for number, code in lines:
            found += [f"{path.name}:{number}: {what}: {code.strip()}"
                      for what, test in CHECKS.items() if test(code)]
    return found


def neuron_tables(paths: list[Path]) -> list[str]:
    return [f"{path.name}:{number}: a Neuron family table: {code.strip()}"
            for path in paths for number, code in code_lines(path) if TABLES.search(code)]


def layer_refusals(paths: list[Path]) -> list[str]:
    return [f"{path.name}:{number}: a refusal in a layer: {code.strip()}"
            for path in paths for number, code in code_lines(path) if REFUSAL.search(code)]


def jax_derivations(paths: list[Path], compared: list[Path]) -> list[str]:
    """The JAX coordinator decided in bash: a JAX_COORDINATOR name in code, an
    IPv6 host bracketed by hand, or NNODES compared in ``compared``."""
    found = []
    for path in paths:
        for number, code in code_lines(path):
            if JAX_NAMES.search(code):
                found.append(f"{path.name}:{number}: a JAX coordinator value in bash: {code.strip()}")
            if HOST_BRACKETS.search(code):
                found.append(f"{path.name}:{number}: a copy of grammar.host_for_port: {code.strip()}")
            if path in compared and NNODES_COMPARED.search(code):
                found.append(f"{path.name}:{number}: NNODES compared in bash: {code.strip()}")
    return found


def test_no_neuron_core_arithmetic_in_bash():
    assert neuron_arithmetic(shell_sources()) == []


def test_no_neuron_table_in_bash():
    # runner/lib/facts.sh (generated) included: bash needs no Neuron table at all.
    assert neuron_tables([*shell_sources(), RUNNER / "lib" / "facts.sh"]) == []


def test_no_layer_refuses_anything():
    layers = [ENVS / name for name in LAYERS]
    assert all(path.is_file() for path in layers)
    assert layer_refusals(layers) == []


def test_the_jax_coordinator_is_not_decided_in_bash():
    compared = [*(ENVS / name for name in LAYERS), RUNNER / "lib" / "workload.sh"]
    assert all(path.is_file() for path in compared)
    assert jax_derivations(shell_sources(), compared) == []


# The bash this replaced (neuron.sh, run_worker.sh and jax_xla.sh).
OLD_NEURON = r'''
    if [[ $item =~ ^([0-9]{1,4})-([0-9]{1,4})$ ]]; then
    printf -v "$1" '%d' $((10#$__devices * 10#$__per / 10#$__lnc))
    __primus_neuron_compact slice "${__PRIMUS_NEURON_CORES[@]:i*k:k}"
  [[ -n ${PRIMUS_NEURON_FAMILY_LNC[${BASH_REMATCH[1]}]-} ]] || return 1
'''
OLD_WORKER = r'''
elif ((10#${PRIMUS_NEURON_CORES_PER_PROC:-1} > 1)); then
  first=$((10#$local_rank * per))
'''
OLD_XLA = r'''
  if ! __primus_is_uint "$XLA_GPU_AUTOTUNE_LEVEL" || ((10#$XLA_GPU_AUTOTUNE_LEVEL < 1)); then
    LOG_ERROR "XLA_GPU_AUTOTUNE_LEVEL='$XLA_GPU_AUTOTUNE_LEVEL' is not allowed"
    return 2
'''

OLD_JAX_LAYER = r'''
    if __primus_is_uint "${NNODES-}" && ((10#$NNODES > 1)); then
      primus_env_default JAX_COORDINATOR_IP "${MASTER_ADDR:-${PRIMUS_DISTRIBUTED_DEFAULTS[MASTER_ADDR]}}" jax_xla
'''
OLD_WORKLOAD = r'''
  ((10#${NNODES:-1} > 1)) || return 0
  [[ -n ${JAX_COORDINATOR_IP:-} ]] || export JAX_COORDINATOR_IP=$MASTER_ADDR
  host=$ip
  [[ $host != *:* || $host == \[* ]] || host="[$host]"
  export RANK=$((10#${NODE_RANK:-0})) WORLD_SIZE=$((10#${NNODES:-1})) LOCAL_RANK=0 LOCAL_WORLD_SIZE=1
'''


def test_the_jax_scan_finds_the_old_bash(tmp_path):
    layer, workload = tmp_path / "jax_xla.sh", tmp_path / "workload.sh"
    layer.write_text(OLD_JAX_LAYER)
    workload.write_text(OLD_WORKLOAD)
    assert [hit.split(": ")[1] for hit in jax_derivations([layer, workload], [layer, workload])] == [
        "NNODES compared in bash", "a JAX coordinator value in bash",
        "NNODES compared in bash", "a JAX coordinator value in bash", "a copy of grammar.host_for_port"]
    # outside the layers and the workload step NNODES may be compared (launch_command.sh's rank list)
    assert [hit.split(": ")[1] for hit in jax_derivations([layer], [])] == ["a JAX coordinator value in bash"]
    # a log tag in brackets is no host:port: common.sh's tag="[$level]"
    tag = tmp_path / "common.sh"
    tag.write_text('  local stamp="" tag="[$level]"\n')
    assert jax_derivations([tag], [tag]) == []


def test_the_scans_find_the_old_bash(tmp_path):
    neuron, worker, xla = tmp_path / "neuron.sh", tmp_path / "run_worker.sh", tmp_path / "jax_xla.sh"
    neuron.write_text(OLD_NEURON)
    worker.write_text(OLD_WORKER)
    xla.write_text(OLD_XLA)
    assert [hit.split(": ")[1] for hit in neuron_arithmetic([neuron, worker])] == [
        "a core-range parser", "NeuronCore arithmetic", "a core slice taken by arithmetic",
        "NeuronCore arithmetic"]
    assert len(neuron_tables([neuron])) == 1
    (tmp_path / "facts.sh").write_text("declare -gA PRIMUS_NEURON_FAMILY_LNC=([trn1]=1 [trn2]=2)\n")
    assert len(neuron_tables([tmp_path / "facts.sh"])) == 1
    assert len(layer_refusals([xla])) == 2
    # A comparison with a default is no arithmetic: run_worker.sh's choice of variable stays.
    assert neuron_arithmetic([worker])[0].startswith("run_worker.sh:3:")
