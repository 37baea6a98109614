#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031,SC2016 # bats runs each test in a subshell
# ROCm hooks of upstream AMD-AGI/Primus@fd1eeabb runner/helpers/hooks/: 03_enable_aiter, 04_rebuild_uep,
# 05_check_primus_requirements, 06_enable_sdma_all_gather, 06_fix_aiter_asm_dir.
# Each runs alone through execute_hooks.sh (one_hook); pip, git, gcc, apt-get,
# make and rocminfo are PATH stubs that record their arguments.

load hooks_helper

setup() {
  hooks_setup
  export PATH="$TOOLS:$PATH" STUB_OUT=$T/stub-out PRIMUS_PYTHON=$TOOLS/python3
  mkdir -p "$STUB_OUT"
}

@test "every hook with its defaults: only AITER_LOG_LEVEL=ERROR and the TURBO backend are emitted" {
  unset AITER_LOG_LEVEL PRIMUS_TURBO_MOE_DISPATCH_COMBINE_BACKEND
  PATH=/usr/bin:/bin hooks train pretrain
  assert_success
  run records
  assert_output "env AITER_LOG_LEVEL=ERROR
env PRIMUS_TURBO_MOE_DISPATCH_COMBINE_BACKEND=TURBO"
}

# --------------------------------------------------------- 03_enable_aiter

@test "03_enable_aiter: AITER_LOG_LEVEL=ERROR unless set (then not started)" {
  unset AITER_LOG_LEVEL
  one_hook 03_enable_aiter.sh train pretrain
  assert_success
  run records
  assert_output 'env AITER_LOG_LEVEL=ERROR'
  AITER_LOG_LEVEL=INFO one_hook 03_enable_aiter.sh train pretrain
  assert_success
  [[ ! -s $T/rec ]]
}

# --------------------------------------------------------- 04_rebuild_uep

@test "04_rebuild_uep: gate off -> nothing called" {
  one_hook 04_rebuild_uep.sh train pretrain
  assert_success
  [[ ! -e $STUB_LOG ]]
}

@test "04_rebuild_uep: clone, apt packages, nanobind, checkout UCCL_REF, buffer.py fix, build, two pip installs" {
  mkdir -p "$T/uccl/ep/deep_ep_wrapper/deep_ep"
  printf 'x = f(a, previous_event=None)\ndef g(previous_event: Optional[E] = None): pass\n' \
    >"$T/uccl/ep/deep_ep_wrapper/deep_ep/buffer.py"
  # git clone is a stub: keep the prepared tree by restoring it after the rm.
  cp -r "$T/uccl" "$T/uccl.src"
  cat >"$STUB_OUT/git.out" </dev/null
  mkdir -p "$T/gitbin"
  cat >"$T/gitbin/git" <<'SH'
#!/usr/bin/env bash
echo "git $*" >>"$STUB_LOG"
[[ $1 != clone ]] || cp -r "$T/uccl.src" "${@: -1}"
SH
  chmod +x "$T/gitbin/git"
  PATH="$T/gitbin:$PATH" REBUILD_UEP=1 UCCL_BUILD_DIR=/x one_hook 04_rebuild_uep.sh train pretrain
  assert_success
  [[ ! -s $T/rec ]]
  run stub_calls
  assert_output "git clone -- https://github.com/uccl-project/uccl.git $T/uccl
apt-get install -y rdma-core libibverbs-dev libnuma-dev libgoogle-glog-dev
pip install nanobind
git -C $T/uccl checkout b99aefd263bf89ed79dbb3207dde5a5b979ea530
make -C $T/uccl/ep
pip install --no-build-isolation $T/uccl
pip install --no-build-isolation $T/uccl/ep/deep_ep_wrapper"
  run cat "$T/uccl/ep/deep_ep_wrapper/deep_ep/buffer.py"
  assert_line 'x = f(a, previous_event=previous_event)'
  assert_line 'def g(previous_event: Optional[E] = None): pass'
  run errors
  assert_output --partial "UCCL_BUILD_DIR=/x is only logged"
}

@test "04_rebuild_uep: --dry-run calls no tool and deletes nothing; UCCL_REF starting with - is exit 2" {
  mkdir -p "$T/uccl"
  REBUILD_UEP=1 UCCL_REF=v1 one_hook 04_rebuild_uep.sh --dry-run train pretrain
  assert_success
  [[ ! -e $STUB_LOG && -d $T/uccl ]]
  run errors
  assert_output --partial "dry run: would run: git -C $T/uccl checkout v1"
  assert_output --partial "dry run: would run: apt-get install -y rdma-core"
  REBUILD_UEP=1 UCCL_REF=--force one_hook 04_rebuild_uep.sh train pretrain
  assert_failure 2
}

# --------------------------------------------------------- 05_check_primus_requirements

@test "05_check_primus_requirements: no requirements.txt -> no python started" {
  export PRIMUS_PATH=$T/repo
  mkdir -p "$T/repo"
  one_hook 05_check_primus_requirements.sh train pretrain
  assert_success
  [[ ! -e $STUB_LOG && ! -s $T/rec ]]
}

@test "05_check_primus_requirements: missing ones warned; strict -> exit 1; auto install -> pip -q -r; installed -> quiet" {
  export PRIMUS_PATH=$T/repo
  mkdir -p "$T/repo"
  printf '%s\n' '# comment' '' '-r other.txt' 'PyYAML>=5' 'No_Such.Pkg-X[extra]==1' 'git+https://x/y.git' >"$T/repo/requirements.txt"
  one_hook 05_check_primus_requirements.sh train pretrain
  assert_success
  run errors
  assert_output --partial "not installed for $TOOLS/python3: no-such-pkg-x git+https://x/y.git"
  PRIMUS_STRICT_REQUIREMENTS=1 PRIMUS_AUTO_INSTALL=1 one_hook 05_check_primus_requirements.sh train pretrain
  assert_failure 1
  [[ ! -e $STUB_LOG ]]
  PRIMUS_AUTO_INSTALL=1 one_hook 05_check_primus_requirements.sh train pretrain
  assert_success
  run stub_calls
  assert_output "pip install -q -r $T/repo/requirements.txt"
  rm -f "$STUB_LOG"
  STUB_PIP_RC=1 PRIMUS_AUTO_INSTALL=1 one_hook 05_check_primus_requirements.sh train pretrain
  assert_failure 1
  rm -f "$STUB_LOG"
  PRIMUS_AUTO_INSTALL=1 one_hook 05_check_primus_requirements.sh --dry-run train pretrain
  assert_success
  [[ ! -e $STUB_LOG ]]
  printf 'pyyaml\n' >"$T/repo/requirements.txt"
  PRIMUS_STRICT_REQUIREMENTS=1 one_hook 05_check_primus_requirements.sh train pretrain
  assert_success
  run errors
  refute_output --partial 'not installed'
}

# --------------------------------------------------------- 06_enable_sdma_all_gather

@test "06_enable_sdma_all_gather: gate off -> nothing" {
  one_hook 06_enable_sdma_all_gather.sh train pretrain
  assert_success
  [[ ! -s $T/rec && ! -e $STUB_LOG ]]
}

@test "06_enable_sdma_all_gather: compiles the shim with the sheet's flags; exact lines; base default 0 of the hook replaced" {
  SDMA_ALL_GATHER=1 TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK=0 PRIMUS_ENV_ORIGINS="TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK:default" \
    LD_PRELOAD=/opt/a.so one_hook 06_enable_sdma_all_gather.sh train pretrain
  assert_success
  run records
  assert_output "env NCCL_CTA_POLICY=2
env NCCL_CUMEM_ENABLE=1
env NCCL_LOCAL_REGISTER=0
env TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK=true
env SDMA_ALL_GATHER=1
env LD_PRELOAD=$T/libhip_attr_drain.so:/opt/a.so"
  run stub_calls
  assert_output "gcc -O2 -fPIC -shared -o $T/libhip_attr_drain.so $T/one/sdma/hip_attr_drain_preload.c -ldl"
}

@test "06_enable_sdma_all_gather: user values kept; --dry-run compiles nothing; missing source exit 1, gcc failure exit 3" {
  SDMA_ALL_GATHER=1 NCCL_CTA_POLICY=1 TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK=false \
    one_hook 06_enable_sdma_all_gather.sh --dry-run train pretrain
  assert_success
  [[ ! -e $STUB_LOG ]]
  run records
  assert_line 'env NCCL_CTA_POLICY=1'
  assert_line 'env TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK=false'
  assert_line "env LD_PRELOAD=$T/libhip_attr_drain.so"
  echo 1 >"$STUB_OUT/gcc.rc"
  SDMA_ALL_GATHER=1 one_hook 06_enable_sdma_all_gather.sh train pretrain
  assert_failure 3
  rm -rf "$T/one/sdma"
  mkdir -p "$T/one/sdma"
  SDMA_ALL_GATHER=1 bash -c '"$0" --hooks-dir "$T/one" train pretrain >"$T/rec" 2>"$T/err"' "$EXEC_HOOKS" || echo "rc=$?" >"$T/rc"
  [[ $(<"$T/rc") == rc=1 ]]
  grep -q 'hip_attr_drain_preload.c is missing' "$T/err"
}

@test "hip_attr_drain_preload.c compiles with the real gcc (-Wall -Wextra -Werror)" {
  run /usr/bin/gcc -O2 -fPIC -shared -Wall -Wextra -Werror -o "$T/lib.so" "$HOOKS/sdma/hip_attr_drain_preload.c" -ldl
  assert_success
  run nm -D --defined-only "$T/lib.so"
  assert_output --partial hipDeviceGetAttribute
  assert_output --partial cudaDeviceGetAttribute
}

# --------------------------------------------------------- 06_fix_aiter_asm_dir

# make_aiter: a fake installed aiter with aiter_meta/hsa/gfx942 kernels.
make_aiter() {
  mkdir -p "$T/site/aiter/jit" "$T/site/aiter_meta/hsa/gfx942/fmha_v3_bwd" "$T/site/aiter_meta/hsa/gfx950"
  : >"$T/site/aiter/__init__.py"
  printf 'import os\nAITER_ASM_DIR = f"{AITER_META_DIR}/hsa/gfx942/"\nOTHER = 1\n' >"$T/site/aiter/jit/core.py"
  : >"$T/site/aiter_meta/hsa/gfx942/gemm.co"
  echo real >"$T/site/aiter_meta/hsa/kept.co"
  : >"$T/site/aiter_meta/hsa/gfx942/kept.co"
  ln -s gfx950/gemm.co "$T/site/aiter_meta/hsa/gemm.co"
  printf '  Name:                    gfx942\n  Marketing Name:          AMD Instinct MI300X\n' >"$STUB_OUT/rocminfo.out"
}

@test "06_fix_aiter_asm_dir: no rocminfo or no aiter -> nothing" {
  make_aiter
  PATH=/usr/bin:/bin PYTHONPATH=$T/site one_hook 06_fix_aiter_asm_dir.sh train pretrain
  assert_success
  grep -q 'hsa/gfx942/' "$T/site/aiter/jit/core.py"
  one_hook 06_fix_aiter_asm_dir.sh train pretrain
  assert_success
  grep -q 'hsa/gfx942/' "$T/site/aiter/jit/core.py"
  [[ ! -s $T/rec ]]
}

@test "06_fix_aiter_asm_dir: AITER_ASM_DIR reset to .../hsa/, relative links made, real files kept, wrong links repaired" {
  make_aiter
  PYTHONPATH=$T/site one_hook 06_fix_aiter_asm_dir.sh train pretrain
  assert_success
  [[ ! -s $T/rec ]]
  run grep AITER_ASM_DIR "$T/site/aiter/jit/core.py"
  assert_output 'AITER_ASM_DIR = f"{AITER_META_DIR}/hsa/"'
  [[ $(readlink "$T/site/aiter_meta/hsa/gemm.co") == gfx942/gemm.co ]]
  [[ $(readlink "$T/site/aiter_meta/hsa/fmha_v3_bwd") == gfx942/fmha_v3_bwd ]]
  [[ ! -L $T/site/aiter_meta/hsa/kept.co && $(<"$T/site/aiter_meta/hsa/kept.co") == real ]]
  run stub_calls
  assert_output rocminfo
}

@test "06_fix_aiter_asm_dir: --dry-run changes nothing" {
  make_aiter
  PYTHONPATH=$T/site one_hook 06_fix_aiter_asm_dir.sh --dry-run train pretrain
  assert_success
  grep -q 'hsa/gfx942/' "$T/site/aiter/jit/core.py"
  [[ $(readlink "$T/site/aiter_meta/hsa/gemm.co") == gfx950/gemm.co ]]
  [[ ! -e $T/site/aiter_meta/hsa/fmha_v3_bwd ]]
  run errors
  assert_output --partial "dry run: would link $T/site/aiter_meta/hsa/fmha_v3_bwd -> gfx942/fmha_v3_bwd"
}
