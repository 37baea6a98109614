"""Decisions that moved from bash to Python stay there: the NUMA binding
(launch/numa.py), the hipBLASLt tuning flow (launch/hipblaslt.py), the flags
`primus-cli slurm` adds and its dry-run step (launch/slurm_submit.py), the AI
NIC traffic classes (network/qos.py), the stop grace under Slurm
(scheduler/stop_grace.py) and a run's stop: its ranks, the grace, the SIGKILL
and the closing line (monitor/supervise.py, monitor/members.py). Each scan reads the code lines (comments
dropped) of every shell file under runner/; a planted copy of the old bash shows
that it finds what it looks for."""
from __future__ import annotations

import re
from pathlib import Path

from test_bash_decides_nothing import code_lines, shell_sources

SCANS = {
    "the NUMA precedence": re.compile(r"direct\.numa|primus_numa_decide|NUMA_DECISION"),
    "the hipBLASLt tuning flow": re.compile(r"PRIMUS_HIPBLASLT_TUNING_STAGE\b.*=~|\|\s*32\b|tune_hipblaslt|"
                                            r"gemm_shape/dump_hipblaslt"),
    # flags added in code (messages may name them) and the config keys read for them
    "the Slurm flags primus-cli slurm adds": re.compile(r"(FLAGS|inner)\+=\(\S*--(ntasks-per-node|kill-on-bad-exit)|"
                                                        r"primus_config_get_into \w+ slurm\.(nodes|time|partition|"
                                                        r"gpus_per_node|signal|requeue)\b|PRIMUS_(HAS|GIVEN)_"),
    "the AI NIC traffic classes": re.compile(r"no-drop priorit|\*\s*4\s*\)\)|==\\?>.*priority"),
    "the Slurm stop grace": re.compile(r"wait\s*-\s*[13]\)\)|wait\s*>\s*6\)\)|\^KillWait.*=~|=~\s*\^KillWait"),
    # the run's processes read in bash, the SIGKILL after the grace, the closing line's counts
    "a run's stop": re.compile(r"\[0-9\]\*/environ|kill -KILL|/worker\.\*|process\(es\) stopped|"
                               r"still running at the stop"),
    # two receipts of one signal compared in bash (monitor/origin.py decides)
    "how a signal came": re.compile(r"<=\s*window\b|_peer_saw\b"),
}


def decisions(paths: list[Path]) -> list[str]:
    return [f"{path.name}:{number}: {what}: {code.strip()}"
            for path in paths for number, code in code_lines(path)
            for what, scan in SCANS.items() if scan.search(code)]


def test_no_moved_decision_is_back_in_bash() -> None:
    assert decisions(shell_sources()) == []


OLD = {
    "numa_decision.sh": '''
  primus_config_get_into numa direct.numa ""
  primus_numa_decide "$PRIMUS_OPT_NUMA" "$numa"
''',
    "hipblaslt_tuning.sh": '''
  [[ $stage =~ ^[0-3]$ ]] || [[ $PRIMUS_HIPBLASLT_TUNING_STAGE =~ ^[0-3]$ ]]
  mask=$((mask | 32))
  printf '%s/tune_hipblaslt/%s' "${workspace%/}" "$tag"
''',
    "primus-cli-slurm.sh": '''
    PRIMUS_ADDED_FLAGS+=(--ntasks-per-node=1)
  primus_config_get_into value slurm.partition ""
  ((PRIMUS_HAS_KILL)) || inner+=(--kill-on-bad-exit=1)
''',
    "slurm_stop.sh": '''
    if [[ $line =~ ^KillWait[[:space:]]*=[[:space:]]*([0-9]+) ]]; then
    if ((__primus_wait > 6)); then __primus_grace=$((__primus_wait - 3)); else __primus_grace=$((__primus_wait - 1)); fi
''',
    "stop_orphans.sh": '''
  done < <(grep -lszxF -- "PRIMUS_RUN_ID=$id" /proc/[0-9]*/environ 2>/dev/null)
  kill -KILL "${left[@]}" 2>/dev/null
  for file in "${PRIMUS_RC_DIR:-/nonexistent}"/worker.*; do
  text="stop: SIG$1, $sender; $7 at the stop; $3 process(es) stopped"
''',
    "signal_origin.sh": '''
      ((diff <= window)) && return 0
  elif primus_signal_peer_saw entry "$2" "$3"; then
''',
    "03_detect_nccl_ib_tc.sh": '''
    if [[ -z $priority && $line == *"PFC no-drop priorities"* ]]; then
  if [[ -z ${NCCL_IB_TC:-} ]]; then hook_emit_env NCCL_IB_TC $((data * 4)); fi
''',
}


def test_the_scans_find_the_old_bash(tmp_path: Path) -> None:
    paths = []
    for name, text in OLD.items():
        (tmp_path / name).write_text(text)
        paths.append(tmp_path / name)
    found = [hit.split(": ")[1] for hit in decisions(paths)]
    assert found.count("the NUMA precedence") == 2
    assert found.count("the hipBLASLt tuning flow") == 3
    assert found.count("the Slurm flags primus-cli slurm adds") == 3
    assert found.count("the AI NIC traffic classes") == 2
    assert found.count("the Slurm stop grace") == 2
    assert found.count("a run's stop") == 4
    assert found.count("how a signal came") == 2
