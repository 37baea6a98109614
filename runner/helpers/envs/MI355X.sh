# shellcheck shell=bash
# runner/helpers/envs/MI355X.sh: AMD Instinct MI355X (gfx950) tuning, sourced
# by primus-env.sh after base_env.sh. Each value is a default: a value the user
# exported is kept (SPEC section 3). Values follow the per-model settings AMD
# Primus ships for this GPU; they differ from MI300X/MI325X in XNACK, the
# interrupt mode and a smaller kernel-argument pool.

# XNACK on, as Primus ships it for MI355X.
primus_env_default HSA_XNACK 1 MI355X
# Interrupt-driven completion signalling.
primus_env_default HSA_ENABLE_INTERRUPT 1 MI355X
# Allow single allocations up to 100% of device memory (large models).
primus_env_default GPU_MAX_HEAP_SIZE 100 MI355X
# 8 MiB kernel-argument pool.
primus_env_default HSA_KERNARG_POOL_SIZE 8388608 MI355X
