# shellcheck shell=bash
# runner/helpers/envs/MI325X.sh: AMD Instinct MI325X (gfx942, 256 GB HBM3E)
# tuning, sourced by primus-env.sh after base_env.sh. Each value is a default:
# a value the user exported is kept (SPEC section 3). Values follow the
# per-model settings AMD Primus ships for this GPU (same as MI300X).

# XNACK (GPU page-fault retry) off: discrete HBM, no unified-memory paging.
primus_env_default HSA_XNACK 0 MI325X
# Allow single allocations up to 100% of device memory (large models).
primus_env_default GPU_MAX_HEAP_SIZE 100 MI325X
# 12 MiB kernel-argument pool for workloads that launch many kernels.
primus_env_default HSA_KERNARG_POOL_SIZE 12582912 MI325X
