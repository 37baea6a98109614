# shellcheck shell=bash
# runner/helpers/envs/MI325X.sh: AMD Instinct MI325X layer, sourced by
# primus-env.sh after base_env.sh.
#
# Exports nothing, exactly like the reference launcher's MI325X file (upstream AMD-AGI/Primus@fd1eeabb runner/helpers/envs/<model>.sh): every setting there is commented out (HSA_XNACK 0,
# GPU_MAX_HEAP_SIZE 100, HSA_KERNARG_POOL_SIZE 12582912, RCCL_MSCCLPP_ENABLE 1,
# RCCL_MSCCLPP_FORCE_ENABLE 1), so none is applied here either. Export one
# yourself (or --env NAME=VALUE) to try it.
