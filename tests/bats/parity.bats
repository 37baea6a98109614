#!/usr/bin/env bats
# shellcheck disable=SC2016 # single-quoted $ in the scripts given to bash -c is meant for that shell
# Parity: each rule that used to have copies lives once, in the rules
# engine (python/primus_runner/env/rules/); the same values fed through the four entry
# points - `env check`, `direct --dry-run`, `slurm-entry --dry-run` and sourcing
# primus-env.sh by hand - must give the same verdict and the same message
# ("NAME='value': <reason>. Fix: <fix>"). One table row per case.

load layers_helper

# var|value|verdict (error, warning, ok)|other variables (space separated NAME=VALUE)|machine
# (a tests/fixtures/sysfs tree; default mi300x-2gpu). `env check` does not detect the
# accelerator (the launcher and base_env.sh do), so the Neuron rows name it.
ROWS=(
  "MASTER_PORT|80|error|"
  "MASTER_PORT|99999|error|"
  "MASTER_PORT|12a|error|"
  "MASTER_PORT|1024|ok|"
  "NNODES| 2|error|"
  "NNODES|0|error|"
  "NODE_RANK| 0|error|"
  "NODE_RANK|2|error|NNODES=2 MASTER_ADDR=gpuvm-01"
  "GPUS_PER_NODE|0|error|"
  "MASTER_ADDR|node..x|error|"
  "MASTER_ADDR|-node|error|"
  "MASTER_ADDR|_node|ok|"
  "MASTER_ADDR|127.0.0.1|warning|NNODES=2 NODE_RANK=0"
  "MASTER_ADDR|localhost|warning|NNODES=2 NODE_RANK=0"
  "PRIMUS_HIPBLASLT_TUNING|1|error|PRIMUS_DETERMINISTIC=1"
  "PRIMUS_SLURM_SRUN_NATIVE|maybe|warning|"
  "NEURON_LOGICAL_NC_CONFIG|3|error|PRIMUS_ACCELERATOR=neuron|trn1.32xlarge"
  "NEURON_RT_VISIBLE_CORES|0-3,2|error|PRIMUS_ACCELERATOR=neuron GPUS_PER_NODE=2|trn1.32xlarge"
  "NEURON_RT_ROOT_COMM_ID|nohost|error|PRIMUS_ACCELERATOR=neuron NNODES=2 NODE_RANK=0 MASTER_ADDR=gpuvm-01|trn1.32xlarge"
)

setup() {
  MACHINE=$SYSFS/mi300x-2gpu
}

# entry MODE NAME=VALUE...: one entry point on the 2-GPU machine, output on stdout.
entry() {
  local mode=$1
  shift
  local -a base=(env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$BATS_TEST_TMPDIR" PRIMUS_LOG_COLOR=0
    PRIMUS_LOG_TIMESTAMP=0 PRIMUS_SYSFS_ROOT="$MACHINE" PRIMUS_DEV_ROOT="$MACHINE"
    PRIMUS_WORKSPACE="$BATS_TEST_TMPDIR/ws" PRIMUS_PYTHON="$VENV_PY" PRIMUS_WORKLOAD_PYTHON="$VENV_PY")
  local -a workload=(--module primus_runner -- train pretrain)
  case $mode in
    check) "${base[@]}" "$@" "$REPO_ROOT/runner/primus-cli" env check ;;
    direct) "${base[@]}" "$@" "$REPO_ROOT/runner/primus-cli" direct --dry-run "${workload[@]}" ;;
    slurm)
      # One step of the job the row describes: node 0 of NNODES (when it is a number).
      local nodes=1 first=gpuvm-01 kv
      for kv in "$@"; do
        case $kv in
          NNODES=*) [[ ${kv#*=} =~ ^[0-9]+$ ]] && ((10#${kv#*=} > 0)) && nodes=$((10#${kv#*=})) ;;
          MASTER_ADDR=*) first=${kv#*=} ;;
        esac
      done
      local list=$first
      ((nodes == 1)) || list="$first,node-b"
      "${base[@]}" SLURM_JOB_ID=7 SLURM_STEP_ID=0 SLURM_NNODES="$nodes" SLURM_NODEID=0 SLURM_PROCID=0 \
        SLURM_NODELIST="$list" "$@" "$REPO_ROOT/runner/primus-cli-slurm-entry.sh" --dry-run direct "${workload[@]}"
      ;;
    source) "${base[@]}" "$@" bash --norc -c 'source "$1"' _ "$PRIMUS_ENV" ;;
  esac
}

# core NAME VALUE TEXT: the finding about NAME='VALUE' in TEXT, without the prefix
# each entry point puts before it ("[env check] ERROR ", "[NODE-0(host)] [ERROR] ").
core() {
  local line want="$1='$2':"
  while IFS= read -r line; do
    if [[ $line == *"$want"* ]]; then
      printf '%s\n' "${line#*"$want"}"
      return 0
    fi
  done <<<"$3"
  return 1
}

@test "every rule row: env check, direct, slurm-entry and sourcing primus-env.sh agree on verdict and message" {
  local row name value verdict others machine mode rc out msg first_msg failures=0
  local -a extra
  for row in "${ROWS[@]}"; do
    IFS='|' read -r name value verdict others machine <<<"$row"
    MACHINE=$SYSFS/${machine:-mi300x-2gpu}
    read -r -a extra <<<"$others"
    first_msg=""
    for mode in check direct slurm source; do
      rc=0
      out=$(entry "$mode" "${extra[@]}" "$name=$value" 2>&1) || rc=$?
      local want_rc=0
      [[ $verdict == error ]] && want_rc=2
      if ((rc != want_rc)); then
        echo "[$row] $mode: exit $rc, expected $want_rc"$'\n'"$out"
        failures=$((failures + 1))
        continue
      fi
      [[ $verdict == ok ]] && continue
      if ! msg=$(core "$name" "$value" "$out"); then
        echo "[$row] $mode: no finding about $name='$value'"$'\n'"$out"
        failures=$((failures + 1))
        continue
      fi
      if [[ $verdict == warning && $out != *"WARNING $name='$value':"* ]]; then
        echo "[$row] $mode: the finding is not a warning"$'\n'"$out"
        failures=$((failures + 1))
      fi
      if [[ -z $first_msg ]]; then
        first_msg=$msg
      elif [[ $msg != "$first_msg" ]]; then
        echo "[$row] $mode says:"$'\n'"  $msg"$'\n'"env check says:"$'\n'"  $first_msg"
        failures=$((failures + 1))
      fi
    done
  done
  ((failures == 0))
}

@test "the launcher's default loopback MASTER_ADDR with NNODES > 1: one error, the same words from direct and by hand" {
  local out rc=0 msg_direct msg_source
  out=$(entry direct NNODES=2 NODE_RANK=0 2>&1) || rc=$?
  [ "$rc" -eq 2 ]
  msg_direct=$(core MASTER_ADDR localhost "$out")
  rc=0
  out=$(entry source NNODES=2 NODE_RANK=0 2>&1) || rc=$?
  [ "$rc" -eq 2 ]
  msg_source=$(core MASTER_ADDR localhost "$out")
  # direct adds where the value came from; the finding itself is the same.
  [[ $msg_direct == "$msg_source"* ]] || { echo "direct: $msg_direct"; echo "source: $msg_source"; return 1; }
  [[ $msg_source == *"is the default, a loopback address, with NNODES=2"* ]]
  # Under Slurm the first host of the node list is the default: no finding.
  rc=0
  out=$(entry slurm NNODES=2 NODE_RANK=0 2>&1) || rc=$?
  [ "$rc" -eq 0 ] || { echo "$out"; return 1; }
}

@test "srun-native words come from the registry: yes switches it on, 0 and unknown words do not" {
  local out rc
  # yes: srun-native is chosen (it then needs srun's per-task SLURM_LOCALID).
  rc=0
  out=$(entry slurm SLURM_NTASKS=2 SLURM_TASKS_PER_NODE=2 PRIMUS_SLURM_SRUN_NATIVE=yes 2>&1) || rc=$?
  [ "$rc" -eq 2 ] && [[ $out == *"srun-native needs SLURM_LOCALID"* ]] || { echo "$out"; return 1; }
  local value
  for value in 0 maybe; do
    rc=0
    out=$(entry slurm SLURM_NTASKS=2 SLURM_TASKS_PER_NODE=2 PRIMUS_SLURM_SRUN_NATIVE="$value" 2>&1) || rc=$?
    [ "$rc" -eq 2 ] && [[ $out == *"every task would start its own torchrun"* ]] || { echo "$value: $out"; return 1; }
  done
}
