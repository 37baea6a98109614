# shellcheck shell=bash
# shellcheck disable=SC2034 # PRIMUS_NUMA_DECISION is read by the direct launcher's summary
# runner/lib/numa_decision.sh: whether the direct launcher binds each local rank
# to its device's NUMA node, and why (the summary and --dry-run show it).
#
# Order: --numa / --no-numa > config direct.numa true|false > ENABLE_NUMA_BINDING=1
# > off. direct.numa: "auto" (upstream Primus's shipped value; upstream binds
# only on `true`: AMD-AGI/Primus fd1eeabb runner/primus-cli-direct.sh:320,692-697)
# and an empty value leave the decision to ENABLE_NUMA_BINDING, else off.
# Owns only the decision; runner/helpers/numa_bind.sh does the binding.

# primus_numa_decide CLI CONFIG: CLI is 1, 0 or "" (no flag); CONFIG the
# config's direct.numa as handed to bash (1, 0, auto or ""). Exports
# PRIMUS_NUMA_BIND (1/0) and sets PRIMUS_NUMA_DECISION (text).
primus_numa_decide() {
  local cli=$1 cfg=$2 bind=0 why
  if [[ $cli == 1 ]]; then
    bind=1 why="--numa"
  elif [[ $cli == 0 ]]; then
    why="--no-numa"
  elif [[ $cfg == 1 ]]; then
    bind=1 why="config direct.numa: true"
  elif [[ ${ENABLE_NUMA_BINDING:-0} == 1 ]]; then
    bind=1 why="ENABLE_NUMA_BINDING=1"
  elif [[ $cfg == 0 ]]; then
    why="config direct.numa: false"
  else
    why="default${cfg:+, config direct.numa: $cfg}; --numa, direct.numa: true or ENABLE_NUMA_BINDING=1 bind"
  fi
  export PRIMUS_NUMA_BIND=$bind  # 0 also overrides an inherited value
  if ((bind)); then
    PRIMUS_NUMA_DECISION="on ($why)"
  else
    PRIMUS_NUMA_DECISION="off ($why)"
  fi
}
