#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031,SC2016 # bats runs each test in a subshell
# Network hooks of upstream AMD-AGI/Primus@fd1eeabb runner/helpers/hooks/: 03_detect_nccl_ib_tc,
# 03_enable_ainic, 05_using_uep, 10_auto_nccl_net. Each runs alone through
# execute_hooks.sh (one_hook); external tools are PATH stubs that record their
# arguments (tests/fixtures/hooks/stubs/bin).

load hooks_helper

setup() {
  hooks_setup
  export PATH="$TOOLS:$PATH" STUB_OUT=$T/stub-out
  mkdir -p "$STUB_OUT"
}

# rdma_device NAME STATE: a fake /sys/class/infiniband/NAME with port 1 in STATE.
rdma_device() {
  mkdir -p "$T/nosys/sys/class/infiniband/$1/ports/1"
  echo "$2" >"$T/nosys/sys/class/infiniband/$1/ports/1/state"
}

# --------------------------------------------------------- 03_detect_nccl_ib_tc

@test "03_detect_nccl_ib_tc: gate off -> nothing, no tool called" {
  rdma_device ionic_0 "4: ACTIVE"
  one_hook 03_detect_nccl_ib_tc.sh train pretrain
  assert_success
  [[ ! -s $T/rec ]]
  [[ ! -e $STUB_LOG ]]
}

@test "03_detect_nccl_ib_tc: ionic NIC -> DSCP x 4 from 'nicctl show qos' (26 -> 104, strict 48 -> 192)" {
  rdma_device ionic_0 "4: ACTIVE"
  cp "$FIX/nicctl/show_qos.txt" "$STUB_OUT/nicctl.out"
  USING_AINIC=1 one_hook 03_detect_nccl_ib_tc.sh train pretrain
  assert_success
  run records
  assert_output "env NCCL_IB_TC=104
env NCCL_IB_FIFO_TC=192"
  run stub_calls
  assert_output "nicctl show qos"
}

@test "03_detect_nccl_ib_tc: Pensando found by ibstat; no strict priority -> FIFO uses the data DSCP" {
  rdma_device rdma0 "4: ACTIVE"
  printf "CA 'rdma0'\n\tCA type: Pensando DSC\n" >"$STUB_OUT/ibstat.out"
  grep -v strict "$FIX/nicctl/show_qos.txt" >"$STUB_OUT/nicctl.out"
  USING_AINIC=1 one_hook 03_detect_nccl_ib_tc.sh train pretrain
  assert_success
  run records
  assert_output "env NCCL_IB_TC=104
env NCCL_IB_FIFO_TC=104"
  run stub_calls
  assert_output "ibstat rdma0
nicctl show qos"
}

@test "03_detect_nccl_ib_tc: user values kept (both: no detection; one: only the other emitted)" {
  rdma_device ionic_0 "4: ACTIVE"
  cp "$FIX/nicctl/show_qos.txt" "$STUB_OUT/nicctl.out"
  USING_AINIC=1 NCCL_IB_TC=96 NCCL_IB_FIFO_TC=160 one_hook 03_detect_nccl_ib_tc.sh train pretrain
  assert_success
  [[ ! -s $T/rec ]]
  [[ ! -e $STUB_LOG ]]
  USING_AINIC=1 NCCL_IB_TC=96 one_hook 03_detect_nccl_ib_tc.sh train pretrain
  assert_success
  run records
  assert_output "env NCCL_IB_FIFO_TC=192"
}

@test "03_detect_nccl_ib_tc: not Pensando, bad QoS text or a failing nicctl -> warning, exit 0, nothing emitted" {
  rdma_device mlx5_0 "4: ACTIVE"
  printf "CA 'mlx5_0'\n\tCA type: MT4129\n" >"$STUB_OUT/ibstat.out"
  USING_AINIC=1 one_hook 03_detect_nccl_ib_tc.sh train pretrain
  assert_success
  [[ ! -s $T/rec ]]
  rm -rf "$T/nosys"
  rdma_device ionic_0 "4: ACTIVE"
  sed 's/: 26 ==>/: 2x6 ==>/' "$FIX/nicctl/show_qos.txt" >"$STUB_OUT/nicctl.out"
  USING_AINIC=1 one_hook 03_detect_nccl_ib_tc.sh train pretrain
  assert_success
  [[ ! -s $T/rec ]]
  run errors
  assert_output --partial "no numeric DSCP for no-drop priority 3"
  echo 3 >"$STUB_OUT/nicctl.rc"
  USING_AINIC=1 one_hook 03_detect_nccl_ib_tc.sh train pretrain
  assert_success
  [[ ! -s $T/rec ]]
  run errors
  assert_output --partial "'nicctl show qos' failed"
}

@test "03_detect_nccl_ib_tc: no nicctl -> apt-get install -y nicctl; --dry-run installs nothing" {
  rdma_device ionic_0 "4: ACTIVE"
  mkdir -p "$T/bin"
  ln -s "$TOOLS/_stub" "$T/bin/apt-get"
  ln -s "$TOOLS/_stub" "$T/bin/ibstat"
  PATH="$T/bin:/usr/bin:/bin" USING_AINIC=1 one_hook 03_detect_nccl_ib_tc.sh train pretrain
  assert_success
  [[ ! -s $T/rec ]]
  run stub_calls
  assert_output "apt-get install -y nicctl"
  rm -f "$STUB_LOG"
  PATH="$T/bin:/usr/bin:/bin" USING_AINIC=1 one_hook 03_detect_nccl_ib_tc.sh --dry-run train pretrain
  assert_success
  [[ ! -e $STUB_LOG ]]
  run errors
  assert_output --partial "dry run: would run: apt-get install -y nicctl"
}

# --------------------------------------------------------- 03_enable_ainic

# ainic_lines PLUGIN LD: the 19 lines with the defaults of the sheet.
ainic_lines() {
  printf '%s\n' "env ANP_HOME_DIR=$T/anp" "env RCCL_HOME_DIR=$T/rccl" "env MPI_HOME_DIR=$T/ompi" \
    "env RCCL_AINIC_ROCE=${3:-1}" "env NCCL_NET_PLUGIN=$1" "env NCCL_IB_TC=104" "env NCCL_IB_FIFO_TC=192" \
    "env NCCL_IB_GID_INDEX=1" "env NCCL_IB_SL=0" "env NET_OPTIONAL_RECV_COMPLETION=1" \
    "env NCCL_IB_ROCE_VERSION_NUM=2" "env NCCL_MAX_P2P_CHANNELS=56" "env NCCL_IB_USE_INLINE=1" \
    "env NCCL_GDR_FLUSH_DISABLE=1" "env NCCL_DMABUF_ENABLE=0" "env NCCL_IGNORE_CPU_AFFINITY=1" \
    "env NCCL_IB_QPS_PER_CONNECTION=1" "env RCCL_GDR_FLUSH_GPU_MEM_NO_RELAXED_ORDERING=0" \
    "env LD_LIBRARY_PATH=$2"
}

# system_libs: the system library folders the hook appends when they exist here.
system_libs() {
  local arch=${HOSTTYPE}-linux-gnu d out=""
  for d in "/usr/lib/$arch" "/usr/lib/$arch/libibverbs"; do
    [[ ! -d $d ]] || out+=:$d
  done
  printf '%s' "$out"
}

@test "03_enable_ainic: gate off -> nothing" {
  one_hook 03_enable_ainic.sh train pretrain
  assert_success
  [[ ! -s $T/rec ]]
}

@test "03_enable_ainic: the 19 values of the sheet; RCCL_AINIC_ROCE=1 -> plugin none; ROCm lib first" {
  mkdir -p "$T/rocm/lib" "$T/rccl/build/release" "$T/anp/build" "$T/ompi/install/lib"
  export USING_AINIC=1 ANP_HOME_DIR=$T/anp RCCL_HOME_DIR=$T/rccl MPI_HOME_DIR=$T/ompi ROCM_HOME=$T/rocm
  LD_LIBRARY_PATH=/usr/local/lib one_hook 03_enable_ainic.sh train pretrain
  assert_success
  run records
  assert_output "$(ainic_lines none "$T/rocm/lib:/usr/local/lib$(system_libs):$T/rccl/build/release:$T/anp/build:$T/ompi/install/lib")"
}

@test "03_enable_ainic: RCCL_AINIC_ROCE=0 -> the plugin found in ANP_HOME_DIR/build; none found is not a failure" {
  export USING_AINIC=1 ANP_HOME_DIR=$T/anp RCCL_HOME_DIR=$T/rccl MPI_HOME_DIR=$T/ompi RCCL_AINIC_ROCE=0
  mkdir -p "$T/anp/build"
  cp "$FIX/anp_net/build/librccl-net.so" "$T/anp/build/"
  one_hook 03_enable_ainic.sh train pretrain
  assert_success
  run records
  assert_line 'env NCCL_NET_PLUGIN=librccl-net.so'
  cp "$FIX/anp_both/build/librccl-anp.so" "$T/anp/build/"
  one_hook 03_enable_ainic.sh train pretrain
  run records
  assert_line 'env NCCL_NET_PLUGIN=librccl-anp.so'
  rm "$T/anp/build"/*.so
  one_hook 03_enable_ainic.sh train pretrain
  assert_success
  run records
  assert_line 'env NCCL_NET_PLUGIN=librccl-anp.so'
  assert_line "env LD_LIBRARY_PATH=$(system_libs | cut -c2-):$T/anp/build"
  run errors
  assert_output --partial "neither librccl-anp.so nor librccl-net.so is in $T/anp/build"
}

@test "03_enable_ainic: user values win; base_env's GID default 3 does not, a detected GID does" {
  export USING_AINIC=1 NCCL_IB_TC=96 NCCL_NET_PLUGIN=mine.so NCCL_MAX_P2P_CHANNELS=32 NCCL_IB_GID_INDEX=3
  PRIMUS_ENV_ORIGINS="NCCL_IB_GID_INDEX:default NCCL_IB_TC:user" one_hook 03_enable_ainic.sh train pretrain
  assert_success
  run records
  assert_line 'env NCCL_IB_TC=96'
  assert_line 'env NCCL_IB_FIFO_TC=192'
  assert_line 'env NCCL_NET_PLUGIN=mine.so'
  assert_line 'env NCCL_MAX_P2P_CHANNELS=32'
  assert_line 'env NCCL_IB_GID_INDEX=1'
  PRIMUS_ENV_ORIGINS="NCCL_IB_GID_INDEX:detected" one_hook 03_enable_ainic.sh train pretrain
  run records
  assert_line 'env NCCL_IB_GID_INDEX=3'
}

@test "03_detect_nccl_ib_tc then 03_enable_ainic: the detected traffic classes are kept" {
  rdma_device ionic_0 "4: ACTIVE"
  sed 's/: 26 ==>/: 10 ==>/' "$FIX/nicctl/show_qos.txt" >"$STUB_OUT/nicctl.out"
  mkdir -p "$T/two"
  cp "$HOOKS/_lib.sh" "$HOOKS/03_detect_nccl_ib_tc.sh" "$HOOKS/03_enable_ainic.sh" "$T/two/"
  USING_AINIC=1 hooks --hooks-dir "$T/two" train pretrain
  assert_success
  run records
  assert_line 'env NCCL_IB_TC=40'
  refute_line 'env NCCL_IB_TC=104'
  [ "$(records | grep -c '^env NCCL_IB_FIFO_TC=192$')" -eq 2 ]
}

# --------------------------------------------------------- 05_using_uep

@test "05_using_uep: USING_UEP off -> backend TURBO unless you set one (gate: backend unset)" {
  unset PRIMUS_TURBO_MOE_DISPATCH_COMBINE_BACKEND
  one_hook 05_using_uep.sh train pretrain
  assert_success
  run records
  assert_output 'env PRIMUS_TURBO_MOE_DISPATCH_COMBINE_BACKEND=TURBO'
  PRIMUS_TURBO_MOE_DISPATCH_COMBINE_BACKEND=DEEP_EP one_hook 05_using_uep.sh train pretrain
  assert_success
  [[ ! -s $T/rec ]]
}

@test "05_using_uep: DEEP_EP, the UCCL copies of the NCCL values, AINIC in-flight limits; pip show asked" {
  export USING_UEP=1 ENABLE_NUMA_BINDING=1 PRIMUS_PYTHON=$TOOLS/python3 STUB_PIP_INSTALLED="uccl deep_ep"
  export NCCL_IB_HCA=ionic_0,ionic_1 NCCL_SOCKET_IFNAME=eth0 NCCL_IB_GID_INDEX=1 NCCL_IB_TC=104 NCCL_IB_SL=0
  USING_AINIC=1 one_hook 05_using_uep.sh train pretrain
  assert_success
  run records
  assert_output "env PRIMUS_TURBO_MOE_DISPATCH_COMBINE_BACKEND=DEEP_EP
env UCCL_IB_GID_INDEX=1
env UCCL_IB_HCA=ionic_0,ionic_1
env UCCL_SOCKET_IFNAME=eth0
env UCCL_IB_TC=104
env UCCL_IB_SL=0
env UCCL_IB_MAX_INFLIGHT_NORMAL=1
env UCCL_IB_MAX_INFLIGHT_LOW_LATENCY=1
env UCCL_IB_MAX_INFLIGHT_BYTES=4194304"
  run stub_calls
  assert_output "pip show uccl
pip show deep_ep"
}

@test "05_using_uep: Broadcom (REBUILD_BNXT=1) limits; own UCCL values kept; nothing else -> no empty lines" {
  export USING_UEP=1 ENABLE_NUMA_BINDING=1 PRIMUS_PYTHON=$TOOLS/python3 STUB_PIP_INSTALLED="uccl deep_ep"
  REBUILD_BNXT=1 UCCL_IB_MAX_INFLIGHT_BYTES=2048 UCCL_IB_HCA=mine NCCL_IB_HCA=theirs one_hook 05_using_uep.sh train pretrain
  assert_success
  run records
  assert_output "env PRIMUS_TURBO_MOE_DISPATCH_COMBINE_BACKEND=DEEP_EP
env UCCL_IB_HCA=mine
env UCCL_IB_MAX_INFLIGHT_NORMAL=1
env UCCL_IB_MAX_INFLIGHT_LOW_LATENCY=1
env UCCL_IB_MAX_INFLIGHT_BYTES=2048"
  one_hook 05_using_uep.sh train pretrain
  run records
  assert_output "env PRIMUS_TURBO_MOE_DISPATCH_COMBINE_BACKEND=DEEP_EP"
}

@test "05_using_uep: uccl or deep_ep not installed -> exit 1 suggesting REBUILD_UEP=1; no NUMA binding warned" {
  export USING_UEP=1 PRIMUS_PYTHON=$TOOLS/python3 STUB_PIP_INSTALLED=uccl
  one_hook 05_using_uep.sh train pretrain
  assert_failure 1
  run errors
  assert_output --partial "pip package(s) 'deep_ep' are not installed"
  assert_output --partial "set REBUILD_UEP=1"
  STUB_PIP_INSTALLED="uccl deep_ep" one_hook 05_using_uep.sh train pretrain
  assert_success
  run errors
  assert_output --partial 'USING_UEP=1 without ENABLE_NUMA_BINDING=1'
}

# --------------------------------------------------------- 10_auto_nccl_net

@test "10_auto_nccl_net: values already set -> not started; empty HCA list -> ACTIVE devices, comma-separated" {
  rdma_device mlx5_0 "4: ACTIVE"
  rdma_device mlx5_1 "1: DOWN"
  rdma_device mlx5_2 "4: ACTIVE"
  NCCL_IB_HCA=mine NCCL_SOCKET_IFNAME=eth0 one_hook 10_auto_nccl_net.sh train pretrain
  assert_success
  [[ ! -s $T/rec ]]
  NCCL_IB_HCA="" NCCL_SOCKET_IFNAME=eth0 one_hook 10_auto_nccl_net.sh train pretrain
  assert_success
  run records
  assert_output "env NCCL_IB_HCA=mlx5_0,mlx5_2
env NCCL_IB_DISABLE=0"
  NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=eth0 one_hook 10_auto_nccl_net.sh train pretrain
  run records
  assert_output "env NCCL_IB_HCA=mlx5_0,mlx5_2"
}

@test "10_auto_nccl_net: no ACTIVE port -> every device; no devices -> nothing" {
  rdma_device mlx5_0 "1: DOWN"
  rdma_device mlx5_1 "1: DOWN"
  NCCL_SOCKET_IFNAME=eth0 one_hook 10_auto_nccl_net.sh train pretrain
  run records
  assert_output "env NCCL_IB_HCA=mlx5_0,mlx5_1
env NCCL_IB_DISABLE=0"
  rm -rf "$T/nosys"
  NCCL_SOCKET_IFNAME=eth0 one_hook 10_auto_nccl_net.sh train pretrain
  assert_success
  [[ ! -s $T/rec ]]
}

@test "10_auto_nccl_net: empty socket interfaces -> the device routing to MASTER_ADDR (ib* first, lo/docker0/veth skipped)" {
  mkdir -p "$T/nosys/sys/class/net/ens1" "$T/nosys/sys/class/net/ib0"
  printf '10.0.0.5 STREAM node0\n10.0.0.6 STREAM node0\n10.0.0.7 STREAM node0\n' >"$STUB_OUT/getent.out"
  mkdir -p "$T/ipbin"
  cat >"$T/ipbin/ip" <<'SH'
#!/usr/bin/env bash
echo "ip $*" >>"$STUB_LOG"
case $4 in
  10.0.0.5) echo "10.0.0.5 dev veth12 src 10.0.0.1 uid 0" ;;
  10.0.0.6) echo "10.0.0.6 via 10.0.0.254 dev ens1 src 10.0.0.1 uid 0" ;;
  10.0.0.7) echo "10.0.0.7 dev ib0 src 10.0.0.1 uid 0" ;;
esac
SH
  chmod +x "$T/ipbin/ip"
  PATH="$T/ipbin:$PATH" NCCL_IB_HCA=x MASTER_ADDR=node0 one_hook 10_auto_nccl_net.sh train pretrain
  assert_success
  run records
  assert_output "env NCCL_SOCKET_IFNAME=ib0
env GLOO_SOCKET_IFNAME=ib0"
  run stub_calls
  assert_output "getent ahostsv4 node0
ip -4 route get 10.0.0.5
ip -4 route get 10.0.0.6
ip -4 route get 10.0.0.7"
}

@test "10_auto_nccl_net: a MASTER_ADDR among the loopback names is not looked up; 127.0.0.1 is, and selects nothing" {
  mkdir -p "$T/ipbin"
  printf '#!/usr/bin/env bash\necho "ip $*" >>"$STUB_LOG"\necho "127.0.0.1 dev lo src 127.0.0.1 uid 0"\n' >"$T/ipbin/ip"
  chmod +x "$T/ipbin/ip"
  local addr
  for addr in localhost LOCALHOST localhost.localdomain; do
    PATH="$T/ipbin:$PATH" NCCL_IB_HCA=x MASTER_ADDR=$addr one_hook 10_auto_nccl_net.sh train pretrain
    assert_success
    [[ ! -s $T/rec ]]
  done
  run stub_calls
  assert_output ""
  # An address is looked up as before: its route is lo, which is never chosen.
  printf '127.0.0.1 STREAM 127.0.0.1\n' >"$STUB_OUT/getent.out"
  PATH="$T/ipbin:$PATH" NCCL_IB_HCA=x MASTER_ADDR=127.0.0.1 one_hook 10_auto_nccl_net.sh train pretrain
  assert_success
  [[ ! -s $T/rec ]]
  run stub_calls
  assert_output "getent ahostsv4 127.0.0.1
ip -4 route get 127.0.0.1"
}

@test "10_auto_nccl_net: after detection (a launch, base_env.sh) it defers: on Trn1 the EFA devices stay out of NCCL_IB_HCA" {
  local trn1=$ROOT/tests/fixtures/sysfs/trn1.32xlarge
  # The hook alone, as a launch runs it: detection done, the Neuron layer emptied NCCL_IB_HCA.
  PRIMUS_SYSFS_ROOT=$trn1 PRIMUS_DETECTION_DONE=1 NCCL_IB_HCA="" NCCL_SOCKET_IFNAME=ens32 \
    one_hook 10_auto_nccl_net.sh train pretrain
  assert_success
  [[ ! -s $T/rec ]]
  # A whole dry-run launch on the Trn1 tree: no second NIC selection after the layer's.
  run env -i PATH="$PATH" HOME="$T" PRIMUS_LOG_COLOR=0 PRIMUS_SYSFS_ROOT="$trn1" PRIMUS_DEV_ROOT="$trn1" \
    PRIMUS_WORKSPACE="$T/ws" PRIMUS_WORKLOAD_PYTHON="$ROOT/.venv/bin/python" \
    "$ROOT/runner/primus-cli" direct --dry-run --module primus_runner -- train pretrain
  assert_success
  refute_output --partial "using the RDMA devices"
  refute_output --partial "NCCL_IB_DISABLE=0"
}
