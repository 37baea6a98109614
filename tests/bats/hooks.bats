#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031,SC2016 # bats runs each test in a subshell; hook bodies are single-quoted on purpose
# Hooks (docs/hooks-and-patches.md "Hooks, gates and patches"): the execute_hooks.sh protocol, the numbered hooks
# 00-02 and the hipBLASLt stages of hooks/train/pretrain/prepare_experiment.sh.
# Patches: hooks_patches.bats; network hooks: hooks_network.bats; ROCm hooks:
# hooks_rocm.bats; framework preparation: hooks_framework.bats.

load hooks_helper

setup() { hooks_setup; }

# ---------------------------------------------------------------- protocol

@test "protocol: values with '=', spaces, quotes and shell syntax arrive literally, in order" {
  hooks --hooks-dir "$FIX/protocol" train pretrain --config 'my exp.yaml'
  assert_success
  run records
  assert_output "env EQ=a=b=c
env SPACES=  two  spaces  
env QUOTES=it's \"quoted\" \$(touch \$MARK) \`touch \$MARK\` ; *
env EMPTY=
env SEEN_EQ=a=b=c
env PY_ARGS=[\"--config\", \"my exp.yaml\"]
env PY_DRY_RUN=unset
extra train_data_path=/data/my corpus=1
env GROUP_SEEN=train/pretrain
env LAST_ARGS=[\"--config\", \"my exp.yaml\", \"--train_data_path\", \"/data/my corpus=1\"]"
  [[ ! -e $MARK ]]
}

@test "protocol: stdout holds only NUL records; other lines and the hooks' stderr go to stderr" {
  hooks --hooks-dir "$FIX/protocol" train pretrain
  assert_success
  run grep -c 'a plain line for the user' "$T/rec"
  assert_output 0
  run errors
  assert_line 'a plain line for the user'
  assert_line 'progress on stderr'
}

@test "protocol: each hook's duration is logged" {
  hooks --hooks-dir "$FIX/protocol" train pretrain
  assert_success
  run errors
  assert_line --regexp '^\[NODE-0\(.*\)\] \[INFO\] hook .*/protocol/00_values\.sh done in [0-9]+\.[0-9]{3} s$'
  assert_line --regexp 'hook .*/protocol/train/pretrain/20_args\.py done in [0-9]+\.[0-9]{3} s$'
}

@test "protocol: only the global hooks and the <group>/<name> hooks run; other files are ignored" {
  hooks --hooks-dir "$FIX/protocol" other thing
  assert_success
  run records
  assert_line 'env OTHER_GROUP=ran'
  refute_line --partial 'GROUP_SEEN'
  refute_output --partial 'README'
}

@test "protocol: a group or name that is not a plain directory name runs only the global hooks" {
  hooks --hooks-dir "$FIX/protocol" .. protocol
  assert_success
  run records
  assert_line 'env EQ=a=b=c'
  refute_line --partial 'OTHER_GROUP'
  refute_line --partial 'GROUP_SEEN'
}

@test "protocol: PRIMUS_HOOKS_DIR selects the hooks directory" {
  PRIMUS_HOOKS_DIR="$FIX/protocol" hooks other thing
  assert_success
  run records
  assert_line 'env OTHER_GROUP=ran'
}

@test "protocol: a missing --hooks-dir is a missing-file error (exit 1)" {
  hooks --hooks-dir "$T/nope" train pretrain
  assert_failure 1
  run errors
  assert_output --partial "hooks directory '$T/nope'"
}

@test "protocol: --dry-run exports PRIMUS_DRY_RUN=1 to every hook" {
  hooks --dry-run --hooks-dir "$FIX/protocol" train pretrain
  assert_success
  run records
  assert_line 'env PY_DRY_RUN=1'
  run errors
  assert_line --regexp 'done in [0-9.]+ s \(dry run\)$'
}

@test "protocol: an invalid env. name stops with exit 2 naming the hook, the line and the name" {
  hooks --hooks-dir "$FIX/invalid_name" train pretrain
  assert_failure 2
  run errors
  assert_output --partial "hook '00_bad.sh' line 3: invalid variable name 'BAD-NAME'"
}

@test "protocol: an env. line without '=' and a bash-internal name are rejected (exit 2)" {
  mkdir -p "$T/h1" "$T/h2"
  echo 'echo env.NOVALUE' >"$T/h1/00_x.sh"
  echo 'echo env.UID=0' >"$T/h2/00_y.sh"
  hooks --hooks-dir "$T/h1" train pretrain
  assert_failure 2
  run errors
  assert_output --partial "hook '00_x.sh' line 1: 'env.NOVALUE' has no '='"
  hooks --hooks-dir "$T/h2" train pretrain
  assert_failure 2
  run errors
  assert_output --partial "env.UID names a variable internal to bash"
}

@test "protocol: an invalid extra. option name is rejected (exit 2)" {
  mkdir -p "$T/h"
  echo 'echo "extra.--evil=1"' >"$T/h/00_x.sh"
  hooks --hooks-dir "$T/h" train pretrain
  assert_failure 2
  run errors
  assert_output --partial "hook '00_x.sh' line 1: invalid option name '--evil'"
}

@test "protocol: secrets in shown lines are masked; an env. record keeps the secret value for the job" {
  mkdir -p "$T/h"
  echo 'echo "logged in with $HF_TOKEN"; echo "env.HF_TOKEN=$HF_TOKEN"' >"$T/h/00_secret.sh"
  HF_TOKEN=hf_s3cr3t_value hooks --hooks-dir "$T/h" train pretrain
  assert_success
  run records
  assert_output 'env HF_TOKEN=hf_s3cr3t_value'
  run errors
  assert_line 'logged in with ****'
  refute_output --partial 'hf_s3cr3t_value'
}

@test "protocol: a hook env. value that sets PATH does not break the following hooks" {
  mkdir -p "$T/h"
  echo 'echo "env.PATH=/nonexistent"' >"$T/h/00_path.sh"
  echo 'echo "env.AFTER=$PATH"' >"$T/h/01_after.sh"
  hooks --hooks-dir "$T/h" train pretrain
  assert_success
  run records
  assert_output "env PATH=/nonexistent
env AFTER=/nonexistent"
}

@test "protocol: a hook printing 10,000 lines succeeds and every line is shown" {
  hooks --hooks-dir "$FIX/big_output" train pretrain
  assert_success
  run records
  assert_output 'env BIG_DONE=1'
  run grep -c '^big line [0-9]*$' "$T/err"
  assert_output 10000
  run grep -x 'big line 10000' "$T/err"
  assert_success
}

@test "protocol: a failing hook with 10,000 lines: exit 3, its whole output shown with name and code" {
  BIG_FAIL=1 hooks --hooks-dir "$FIX/big_output" train pretrain
  assert_failure 3
  run grep -c '^big line [0-9]*$' "$T/err"
  assert_output 10000
  run errors
  assert_line --partial "hook '$FIX/big_output/00_big.sh' failed with exit code 7; its stderr is above, its stdout follows."
  assert_line 'big line 1'
  assert_line 'big line 10000'
  assert_line 'big stderr line'
  assert_line '----- end of hook 00_big.sh (exit code 7) -----'
  [[ ! -s $T/rec ]]
}

@test "protocol: a failing .py hook stops the launch with exit 3; later hooks never run" {
  hooks --hooks-dir "$FIX/failing_py" train pretrain
  assert_failure 3
  run records
  assert_output 'env BEFORE=1'
  run errors
  assert_line --partial "hook '$FIX/failing_py/01_fail.py' failed with exit code 1"
  assert_line 'stdout before the failure'
  assert_line 'failing python hook: disk quota exceeded'
  [[ ! -e $MARK ]]
}

@test "protocol: hook exit 78 is a configuration error (2), 66 a missing dependency (1), others 3" {
  HOOK_CODE=78 hooks --hooks-dir "$FIX/exit_codes" train pretrain
  assert_failure 2
  HOOK_CODE=66 hooks --hooks-dir "$FIX/exit_codes" train pretrain
  assert_failure 1
  HOOK_CODE=2 hooks --hooks-dir "$FIX/exit_codes" train pretrain
  assert_failure 3
  run errors
  assert_line 'exiting with 2'
}

@test "protocol: --help describes the usage and exit codes" {
  run "$EXEC_HOOKS" --help
  assert_success
  assert_output --partial 'execute_hooks.sh [--dry-run] [--hooks-dir DIR] <group> <name>'
  assert_output --partial 'EX_CONFIG'
  run "$EXEC_HOOKS" --bogus
  assert_failure 2
}

# ---------------------------------------------------------------- numbered hooks

@test "numbered hooks: every gate off -> no records and no interpreter started" {
  export PRIMUS_PYTHON="$STUBS/python3"
  hooks train pretrain --data_path /nowhere
  assert_success
  [[ ! -s $T/rec ]]
  [[ ! -e $STUB_LOG ]]
}

@test "numbered hooks: a gate that is not 0/1 is a configuration error (exit 2)" {
  REBUILD_PRIMUS_TURBO=yes hooks train pretrain
  assert_failure 2
  run errors
  assert_output --partial "REBUILD_PRIMUS_TURBO='yes' is not a switch; accepted: 1 (on) or 0 / unset (off)."
}

make_turbo_repo() {
  cp -r "$FIX/turbo" "$T/turbo-repo"
  git -C "$T/turbo-repo" init -q
  git -C "$T/turbo-repo" add -A
  git -C "$T/turbo-repo" -c user.name=t -c user.email=t@example.com commit -qm init
  git -C "$T/turbo-repo" checkout -qb feature
  echo 'feature' >"$T/turbo-repo/FEATURE"
  git -C "$T/turbo-repo" add FEATURE
  git -C "$T/turbo-repo" -c user.name=t -c user.email=t@example.com commit -qm feature
  git -C "$T/turbo-repo" checkout -q -
}

@test "00_rebuild_primus_turbo: clones, installs requirements and builds with GPU_ARCHS and MAX_JOBS" {
  make_turbo_repo
  export REBUILD_PRIMUS_TURBO=1 PRIMUS_TURBO_REPO="$T/turbo-repo" PRIMUS_TURBO_BUILD_DIR="$T/build"
  export PRIMUS_TURBO_REF=feature GPU_ARCHS='gfx942' MAX_JOBS=4 PRIMUS_PYTHON="$STUBS/python3"
  hooks train pretrain
  assert_success
  [[ -f $T/build/Primus-Turbo/setup.py && -f $T/build/Primus-Turbo/FEATURE ]]
  run cat "$STUB_LOG"
  assert_output "--- pip
cwd=$T
GPU_ARCHS=gfx942
MAX_JOBS=4
install
-r
$T/build/Primus-Turbo/requirements.txt
--- pip
cwd=$T/build/Primus-Turbo
GPU_ARCHS=gfx942
MAX_JOBS=4
install
--no-build-isolation
."
  [[ ! -s $T/rec ]]
}

@test "00_rebuild_primus_turbo: default GPU_ARCHS, PRIMUS_SKIP_PIP=1 skips the requirements only" {
  make_turbo_repo
  export REBUILD_PRIMUS_TURBO=1 PRIMUS_TURBO_REPO="$T/turbo-repo" PRIMUS_TURBO_BUILD_DIR="$T/build"
  export PRIMUS_SKIP_PIP=1 PRIMUS_PYTHON="$STUBS/python3"
  hooks train pretrain
  assert_success
  run cat "$STUB_LOG"
  assert_output "--- pip
cwd=$T/build/Primus-Turbo
GPU_ARCHS=gfx942;gfx950
MAX_JOBS=<unset>
install
--no-build-isolation
."
  run errors
  assert_output --partial 'PRIMUS_SKIP_PIP=1: not installing'
}

@test "00_rebuild_primus_turbo: --dry-run clones nothing and builds nothing" {
  make_turbo_repo
  export REBUILD_PRIMUS_TURBO=1 PRIMUS_TURBO_REPO="$T/turbo-repo" PRIMUS_TURBO_BUILD_DIR="$T/build"
  export PRIMUS_PYTHON="$STUBS/python3"
  hooks --dry-run train pretrain
  assert_success
  [[ ! -e $T/build ]]
  [[ ! -e $STUB_LOG ]]
  run errors
  assert_output --partial "dry run: would run: git clone --recursive -- $T/turbo-repo $T/build/Primus-Turbo"
  assert_output --partial 'dry run: would run:'
  assert_output --partial '-m pip install --no-build-isolation'
}

@test "00_rebuild_primus_turbo: bad GPU_ARCHS or MAX_JOBS is a configuration error (exit 2)" {
  export REBUILD_PRIMUS_TURBO=1 PRIMUS_PYTHON="$STUBS/python3"
  GPU_ARCHS='gfx942,gfx950' hooks train pretrain
  assert_failure 2
  run errors
  assert_output --partial "GPU_ARCHS='gfx942,gfx950' has 'gfx942,gfx950', which is not a GPU target"
  MAX_JOBS=many hooks train pretrain
  assert_failure 2
  run errors
  assert_output --partial "MAX_JOBS='many' is not a positive integer"
  [[ ! -e $STUB_LOG ]]
}

copy_te() {
  cp -r "$FIX/te/site" "$T/site"
  export PYTHONPATH="$T/site"
  ATTN="$T/site/transformer_engine/pytorch/attention.py"
}

@test "01_patch_te_flash_attn: patches the installed file, keeps a backup, is idempotent" {
  copy_te
  export PATCH_TE_FLASH_ATTN=1
  hooks train pretrain
  assert_success
  run grep -n '_flash_attn_max_version' "$ATTN"
  assert_output '4:_flash_attn_max_version = PkgVersion("3.0.0.post1")'
  run cmp "$ATTN.primus-orig" "$FIX/te/site/transformer_engine/pytorch/attention.py"
  assert_success
  cp "$ATTN" "$T/after-first"
  hooks train pretrain
  assert_success
  run cmp "$ATTN" "$T/after-first"
  assert_success
  run cmp "$ATTN.primus-orig" "$FIX/te/site/transformer_engine/pytorch/attention.py"
  assert_success
  run errors
  assert_output --partial 'already allows flash-attn up to 3.0.0.post1; unchanged'
}

@test "01_patch_te_flash_attn: --dry-run changes nothing; a custom target version applies" {
  copy_te
  export PATCH_TE_FLASH_ATTN=1
  hooks --dry-run train pretrain
  assert_success
  run cmp "$ATTN" "$FIX/te/site/transformer_engine/pytorch/attention.py"
  assert_success
  [[ ! -e $ATTN.primus-orig ]]
  run errors
  assert_output --partial "dry run: would patch $ATTN: _flash_attn_max_version 2.6.3 -> 3.0.0.post1"
  PRIMUS_TE_FLASH_ATTN_MAX_VERSION=2.8.0 hooks train pretrain
  assert_success
  run grep '_flash_attn_max_version' "$ATTN"
  assert_output '_flash_attn_max_version = PkgVersion("2.8.0")'
}

@test "01_patch_te_flash_attn: transformer_engine not installed is exit 1 naming the fix" {
  export PATCH_TE_FLASH_ATTN=1 PYTHONPATH="$T/empty"
  hooks train pretrain
  assert_failure 1
  run errors
  assert_output --partial 'PATCH_TE_FLASH_ATTN=1 but transformer_engine is not installed'
}

make_bnxt() {
  tar -czf "$T/libbnxt_re-1.0.0.tar.gz" -C "$FIX/bnxt" libbnxt_re-1.0.0
  SYSROOT="$T/root"
  LIBDIR="$SYSROOT/usr/lib/${HOSTTYPE}-linux-gnu/libibverbs"
  mkdir -p "$LIBDIR" "$SYSROOT/etc/ld.so.conf.d"
  echo 'inbox' >"$LIBDIR/libbnxt_re-rdmav34.so"
  echo 'include /etc/ld.so.conf.d/*.conf' >"$SYSROOT/etc/ld.so.conf"
  export REBUILD_BNXT=1 PATH_TO_BNXT_TAR_PACKAGE="$T/libbnxt_re-1.0.0.tar.gz" PRIMUS_BNXT_SYSROOT="$SYSROOT"
  export PATH="$STUBS:$PATH"
}

@test "02_rebuild_bnxt: unpacks, configures, runs make clean all install, installs the driver" {
  make_bnxt
  hooks train pretrain
  assert_success
  run cat "$STUB_LOG"
  assert_output --regexp "^autogen.sh 
configure 
--- make
cwd=${TMPDIR:-/tmp}/primus-bnxt\.[A-Za-z0-9]+/libbnxt_re-1\.0\.0
clean
all
install$"
  run cat "$LIBDIR/libbnxt_re-rdmav34.so.inbox"
  assert_output 'inbox'
  [[ ! -e $LIBDIR/libbnxt_re-rdmav34.so ]]
  run cat "$SYSROOT/etc/ld.so.conf.d/libbnxt_re.conf"
  assert_output '/usr/local/lib'
  [[ -f $SYSROOT/etc/ld.so.cache ]]
  run cat "$SYSROOT/etc/libibverbs.d/bnxt_re.driver"
  assert_output 'driver bnxt_re'
}

@test "02_rebuild_bnxt: --dry-run changes nothing" {
  make_bnxt
  hooks --dry-run train pretrain
  assert_success
  [[ ! -e $STUB_LOG ]]
  [[ -f $LIBDIR/libbnxt_re-rdmav34.so && ! -e $SYSROOT/etc/ld.so.conf.d/libbnxt_re.conf ]]
  [[ ! -e $SYSROOT/etc/ld.so.cache && ! -e $SYSROOT/etc/libibverbs.d ]]
  run errors
  assert_output --partial "dry run: would run in ${TMPDIR:-/tmp}/primus-bnxt.XXXXXX/libbnxt_re-*/: sh ./autogen.sh; ./configure; make clean all install"
}

@test "02_rebuild_bnxt: PATH_TO_BNXT_TAR_PACKAGE unset is exit 2, a missing file exit 1" {
  export REBUILD_BNXT=1 PATH="$STUBS:$PATH"
  hooks train pretrain
  assert_failure 2
  run errors
  assert_output --partial 'REBUILD_BNXT=1 needs PATH_TO_BNXT_TAR_PACKAGE'
  PATH_TO_BNXT_TAR_PACKAGE="$T/none.tar.gz" hooks train pretrain
  assert_failure 1
  run errors
  assert_output --partial "PATH_TO_BNXT_TAR_PACKAGE='$T/none.tar.gz' is not a readable file"
  [[ ! -e $STUB_LOG ]]
}

# ---------------------------------------------------------------- hipBLASLt

@test "hipBLASLt: master switch off and nothing set -> no records" {
  hooks train pretrain --config cfg/exp.yaml
  assert_success
  [[ ! -s $T/rec ]]
}

@test "hipBLASLt: a stage without the master switch is ignored with a warning" {
  PRIMUS_HIPBLASLT_TUNING_STAGE=1 hooks train pretrain --config cfg/exp.yaml
  assert_success
  [[ ! -s $T/rec ]]
  run errors
  assert_output --partial 'PRIMUS_HIPBLASLT_TUNING_STAGE=1 is ignored: PRIMUS_HIPBLASLT_TUNING is not 1'
}

@test "hipBLASLt stage 0: TE online tuning counts (defaults and user values)" {
  PRIMUS_HIPBLASLT_TUNING=1 hooks train pretrain
  assert_success
  run records
  assert_output "env TE_HIPBLASLT_TUNING_RUN_COUNT=10
env TE_HIPBLASLT_TUNING_ALGO_COUNT=50"
  PRIMUS_HIPBLASLT_TUNING=1 TE_HIPBLASLT_TUNING_RUN_COUNT=3 hooks train pretrain
  run records
  assert_line 'env TE_HIPBLASLT_TUNING_RUN_COUNT=3'
}

@test "hipBLASLt stage 1: dumps shapes (log mask, per-node log file, no override), creates the directory" {
  export PRIMUS_HIPBLASLT_TUNING=1 PRIMUS_HIPBLASLT_TUNING_STAGE=1 PRIMUS_WORKSPACE="$T/ws" NODE_RANK=3
  hooks train pretrain --config cfg/exp.yaml
  assert_success
  run records
  assert_output "env HIPBLASLT_LOG_MASK=32
env HIPBLASLT_LOG_FILE=$T/ws/tune_hipblaslt/exp/gemm_shape/dump_hipblaslt_gemm_shape_3_%i.txt
env HIPBLASLT_TUNING_OVERRIDE_FILE=
env TE_HIPBLASLT_TUNING_RUN_COUNT=0
env TE_HIPBLASLT_TUNING_ALGO_COUNT=0"
  [[ -d $T/ws/tune_hipblaslt/exp/gemm_shape ]]
  HIPBLASLT_LOG_MASK=8 hooks train pretrain --config cfg/exp.yaml
  run records
  assert_line 'env HIPBLASLT_LOG_MASK=40'
}

@test "hipBLASLt: with PRIMUS_PATH (a Primus checkout) and no PRIMUS_WORKSPACE the tune directory is upstream's <checkout>/output, the tuner upstream's" {
  export PRIMUS_HIPBLASLT_TUNING=1 PRIMUS_HIPBLASLT_TUNING_STAGE=1 PRIMUS_PATH="$T/Primus" NODE_RANK=1
  unset PRIMUS_WORKSPACE
  hooks train pretrain --config cfg/exp.yaml
  assert_success
  run records
  assert_line "env HIPBLASLT_LOG_FILE=$T/Primus/output/tune_hipblaslt/exp/gemm_shape/dump_hipblaslt_gemm_shape_1_%i.txt"
  [[ -d $T/Primus/output/tune_hipblaslt/exp/gemm_shape ]]
  # Stage 2 on node 0 runs <checkout>/examples/offline_tune/offline_tune_gemm.py by default.
  PRIMUS_HIPBLASLT_TUNING_STAGE=2 NODE_RANK=0 hooks train pretrain --config cfg/exp.yaml
  assert_failure 1
  run errors
  assert_output --partial "the hipBLASLt offline tuner '$T/Primus/examples/offline_tune/offline_tune_gemm.py' does not exist"
}

@test "hipBLASLt stage 1: --dry-run creates nothing; HIPBLASLT_LOG_LEVEL set is exit 2" {
  export PRIMUS_HIPBLASLT_TUNING=1 PRIMUS_HIPBLASLT_TUNING_STAGE=1 PRIMUS_WORKSPACE="$T/ws" PRIMUS_MODEL=llama
  hooks --dry-run train pretrain
  assert_success
  [[ ! -e $T/ws ]]
  run records
  assert_line "env HIPBLASLT_LOG_FILE=$T/ws/tune_hipblaslt/llama/gemm_shape/dump_hipblaslt_gemm_shape_0_%i.txt"
  HIPBLASLT_LOG_LEVEL=4 hooks train pretrain
  assert_failure 2
  run errors
  assert_output --partial "needs HIPBLASLT_LOG_LEVEL unset, but it is '4'"
}

@test "hipBLASLt stage 2: node 0 runs the offline tuner; every node skips the main launch" {
  export PRIMUS_HIPBLASLT_TUNING=1 PRIMUS_HIPBLASLT_TUNING_STAGE=2 PRIMUS_WORKSPACE="$T/ws" GPUS_PER_NODE=4
  export PRIMUS_HIPBLASLT_TUNER="$STUBS/offline_tune_gemm.sh"
  local root=$T/ws/tune_hipblaslt/exp
  mkdir -p "$root/gemm_shape"
  echo 'hipblaslt-bench --m 128' >"$root/gemm_shape/dump_hipblaslt_gemm_shape_0_1.txt"
  hooks train pretrain --config cfg/exp.yaml
  assert_success
  run cat "$STUB_LOG"
  assert_output "--- tuner
--dump-shape-path-or-file
$root/gemm_shape
--tune-result-path
$root/gemm_tune/tune_hipblas_gemm_results.txt
--num-devices
4"
  run records
  assert_output "env PRIMUS_SKIP_MAIN_LAUNCH=1
env TE_HIPBLASLT_TUNING_RUN_COUNT=0
env TE_HIPBLASLT_TUNING_ALGO_COUNT=0"
  rm "$STUB_LOG"
  NODE_RANK=1 hooks train pretrain --config cfg/exp.yaml
  assert_success
  [[ ! -e $STUB_LOG ]]
  run records
  assert_line 'env PRIMUS_SKIP_MAIN_LAUNCH=1'
}

@test "hipBLASLt stage 2: no dumped shapes is exit 2; a missing tuner exit 1" {
  export PRIMUS_HIPBLASLT_TUNING=1 PRIMUS_HIPBLASLT_TUNING_STAGE=2 PRIMUS_WORKSPACE="$T/ws"
  PRIMUS_HIPBLASLT_TUNER="$STUBS/offline_tune_gemm.sh" hooks train pretrain --config cfg/exp.yaml
  assert_failure 2
  run errors
  assert_output --partial "found no GEMM shapes in $T/ws/tune_hipblaslt/exp/gemm_shape; run stage 1 first"
  PRIMUS_HIPBLASLT_TUNER="$T/missing_tuner.py" hooks train pretrain --config cfg/exp.yaml
  assert_failure 1
  run errors
  assert_output --partial "the hipBLASLt offline tuner '$T/missing_tuner.py' does not exist"
}

@test "hipBLASLt stage 3: applies the override file; a missing one is exit 2 with the fix" {
  export PRIMUS_HIPBLASLT_TUNING=1 PRIMUS_HIPBLASLT_TUNING_STAGE=3 PRIMUS_WORKSPACE="$T/ws"
  HIPBLASLT_TUNING_OVERRIDE_FILE="$T/nope.txt" hooks train pretrain --config cfg/exp.yaml
  assert_failure 2
  run errors
  assert_output --partial "HIPBLASLT_TUNING_OVERRIDE_FILE='$T/nope.txt' does not exist"
  hooks train pretrain --config cfg/exp.yaml
  assert_failure 2
  run errors
  assert_output --partial "no tuning result at $T/ws/tune_hipblaslt/exp/gemm_tune/tune_hipblas_gemm_results.txt"
  mkdir -p "$T/ws/tune_hipblaslt/exp/gemm_tune"
  echo 'tuned' >"$T/ws/tune_hipblaslt/exp/gemm_tune/tune_hipblas_gemm_results.txt"
  hooks train pretrain --config cfg/exp.yaml
  assert_success
  run records
  assert_output "env HIPBLASLT_TUNING_OVERRIDE_FILE=$T/ws/tune_hipblaslt/exp/gemm_tune/tune_hipblas_gemm_results.txt
env TE_HIPBLASLT_TUNING_RUN_COUNT=0
env TE_HIPBLASLT_TUNING_ALGO_COUNT=0"
  echo 'mine' >"$T/mine.txt"
  HIPBLASLT_TUNING_OVERRIDE_FILE=mine.txt hooks train pretrain
  run records
  assert_line "env HIPBLASLT_TUNING_OVERRIDE_FILE=$T/mine.txt"
}

@test "hipBLASLt: deterministic mode applies no tuning (env check refuses it) and disables TE tuning counts" {
  PRIMUS_DETERMINISTIC=1 PRIMUS_HIPBLASLT_TUNING=1 hooks train pretrain
  assert_success
  run records
  assert_output ""
  PRIMUS_DETERMINISTIC=1 TE_HIPBLASLT_TUNING=1 hooks train pretrain
  assert_success
  run records
  assert_output "env TE_HIPBLASLT_TUNING_RUN_COUNT=0
env TE_HIPBLASLT_TUNING_ALGO_COUNT=0"
  PRIMUS_DETERMINISTIC=1 hooks train pretrain
  assert_success
  run records
  assert_output "env TE_HIPBLASLT_TUNING_RUN_COUNT=0
env TE_HIPBLASLT_TUNING_ALGO_COUNT=0"
}

@test "hipBLASLt: TE_HIPBLASLT_TUNING=1 alone enables TE online tuning; offline stages override it with a warning" {
  TE_HIPBLASLT_TUNING=1 hooks train pretrain
  assert_success
  run records
  assert_output "env TE_HIPBLASLT_TUNING_RUN_COUNT=10
env TE_HIPBLASLT_TUNING_ALGO_COUNT=50"
  TE_HIPBLASLT_TUNING=1 PRIMUS_HIPBLASLT_TUNING=1 PRIMUS_HIPBLASLT_TUNING_STAGE=1 PRIMUS_WORKSPACE="$T/ws" \
    hooks train pretrain
  assert_success
  run records
  assert_line 'env TE_HIPBLASLT_TUNING_RUN_COUNT=0'
  run errors
  assert_output --partial 'TE_HIPBLASLT_TUNING=1 is overridden during hipBLASLt stage 1'
}

@test "hipBLASLt: an unknown stage is exit 2" {
  PRIMUS_HIPBLASLT_TUNING=1 PRIMUS_HIPBLASLT_TUNING_STAGE=4 hooks train pretrain
  assert_failure 2
  run errors
  assert_output --partial "PRIMUS_HIPBLASLT_TUNING_STAGE='4' is not a stage; accepted: 0 (off), 1 (dump shapes), 2 (offline tune), 3 (apply tuned kernels)."
}

@test "a hook whose declared gate variables are all off is not started; one on starts it" {
  mkdir -p "$T/h"
  printf '#!/usr/bin/env bash\n# primus-hook-gate: PRIMUS_T_GATE_A PRIMUS_T_GATE_B\ntouch "$MARK"\necho env.PRIMUS_T_RAN=1\n' >"$T/h/10_gated.sh"
  PRIMUS_T_GATE_A=0 hooks --hooks-dir "$T/h" train pretrain
  assert_success
  [[ ! -e $MARK ]]
  [[ ! -s $T/rec ]]
  PRIMUS_T_GATE_B=1 hooks --hooks-dir "$T/h" train pretrain
  assert_success
  [[ -e $MARK ]]
  [[ $(tr '\0' '|' <"$T/rec") == "env|PRIMUS_T_RAN|1|" ]]
}

@test "an earlier hook's env. line opens a later hook's gate" {
  mkdir -p "$T/h"
  printf '#!/usr/bin/env bash\necho env.PRIMUS_T_GATE_A=1\n' >"$T/h/10_opens.sh"
  printf '#!/usr/bin/env bash\n# primus-hook-gate: PRIMUS_T_GATE_A\ntouch "$MARK"\n' >"$T/h/20_gated.sh"
  hooks --hooks-dir "$T/h" train pretrain
  assert_success
  [[ -e $MARK ]]
}
