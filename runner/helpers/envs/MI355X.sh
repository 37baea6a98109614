# shellcheck shell=bash
# runner/helpers/envs/MI355X.sh: AMD Instinct MI355X layer, sourced by
# primus-env.sh after base_env.sh.
#
# The reference launcher's MI355X file exports one value (upstream AMD-AGI/Primus@fd1eeabb runner/helpers/envs/<model>.sh):
# RCCL_WARP_SPEED_AUTO, default 0 (a value you exported is kept). Its other
# lines are commented out (HSA_XNACK 1, HSA_ENABLE_INTERRUPT 1,
# GPU_MAX_HEAP_SIZE 100, HSA_KERNARG_POOL_SIZE 8388608) and are not applied.
primus_env_default RCCL_WARP_SPEED_AUTO 0 MI355X
