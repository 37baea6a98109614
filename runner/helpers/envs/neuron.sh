# shellcheck shell=bash
# runner/helpers/envs/neuron.sh: the AWS Neuron layer (Trn1, Trn2, Trn3, Inf2),
# sourced by primus-env.sh after base_env.sh when PRIMUS_ACCELERATOR=neuron.
# Every value is a default: a value the user exported is kept (docs/configuration.md "Configuration").
#
# This layer decides nothing: python/primus_runner/launch/neuron_layer.py
# decides every value from the shell's variables (the NeuronCore, LNC and slice
# arithmetic is python/primus_runner/hardware/neuron_cores.py; the root comm id
# is python/primus_runner/cluster/ranks.py's), and this file exports what it
# returns. Every Neuron check is a rule of the rules engine
# (python/primus_runner/env/rules/neuron*.py), run by `env check` and by
# `primus-cli direct` alike.
#
# How it asks (primus_env_ask, runner/lib/env_origin.sh): inside `primus-cli
# direct`, through the launch helper it already runs (primus_helper_layer,
# runner/lib/launch_helper.sh: no Python start of its own); sourced by hand,
# `python3 -m primus_runner layer neuron` (one start), with the caller's
# unexported variables passed too (they are the user's).
#
# Inputs: the instance facts from detection (PRIMUS_NEURON_INSTANCE,
# PRIMUS_NEURON_DEVICES, PRIMUS_NEURON_CORES_PER_DEVICE, PRIMUS_NEURON_DEFAULT_LNC,
# PRIMUS_NEURON_LOGICAL_CORES), PRIMUS_NEURON_CORES_PER_PROC=K (primus-cli direct
# --neuron-cores-per-proc K), NEURON_RT_VISIBLE_CORES, NEURON_RT_NUM_CORES,
# NEURON_LOGICAL_NC_CONFIG, NEURON_RT_VIRTUAL_CORE_SIZE, GPUS_PER_NODE, NNODES,
# MASTER_ADDR, MASTER_PORT, PRIMUS_NEURON_ROOT_COMM_PORT, IP_INTERFACE.
#
# What it sets (see neuron_layer.py for the derivations; docs/run-on-trainium.md "AWS Neuron (Trainium, Inferentia2)"):
#   NEURON_LOGICAL_NC_CONFIG  the family default LNC (not with the deprecated
#                             NEURON_RT_VIRTUAL_CORE_SIZE set)
#   GPUS_PER_NODE             processes per node: available logical cores / K
#   PRIMUS_NEURON_CORE_SLICES one core list per local rank; run_worker.sh hands
#                             local rank i word i (K>1: as its
#                             NEURON_RT_VISIBLE_CORES; K=1: as PRIMUS_NEURON_CORE)
#   MALLOC_ARENA_MAX          AWS Neuron training scripts ("HOST OOM")
#   NCCL_IB_*                 unset unless the user set them (EFA, not NCCL's IB)
#   NNODES > 1 only: NEURON_RT_ROOT_COMM_ID, NEURON_RT_EXEC_TIMEOUT, FI_PROVIDER,
#   FI_EFA_USE_DEVICE_RDMA, FI_EFA_FORK_SAFE, CCOM_SOCKET_IFNAME
#
#   primus_neuron_slices    PRIMUS_NEURON_CORE_SLICES again from the current
#                           values; the launcher calls it after the last --env

# __primus_neuron_ask WHICH: the decision WHICH (neuron, neuron-slices) applied
# (primus_env_ask, runner/lib/env_origin.sh: the launch helper, else one
# python3 start).
__primus_neuron_ask() {
  primus_env_ask "$1" neuron && return 0
  LOG_WARN_RANK0 "neuron: the Neuron layer's decision could not run ($PRIMUS_ENV_ASK_FAILED); no Neuron default was set and GPUS_PER_NODE stays ${GPUS_PER_NODE-unset}. Fix: run 'make setup' (or set PRIMUS_PYTHON to a python3 with the project's requirements), or export the values yourself."
}

# primus_neuron_slices: PRIMUS_NEURON_CORE_SLICES from the current values.
primus_neuron_slices() {
  __primus_neuron_ask neuron-slices
}

# __primus_neuron_layer: the whole layer, then one summary line.
__primus_neuron_layer() {
  __primus_neuron_ask neuron
  LOG_INFO_RANK0 "neuron: instance=${PRIMUS_NEURON_INSTANCE:-unknown} NEURON_LOGICAL_NC_CONFIG=${NEURON_LOGICAL_NC_CONFIG-} GPUS_PER_NODE=${GPUS_PER_NODE-}${PRIMUS_NEURON_CORES_PER_PROC:+ slices=${PRIMUS_NEURON_CORE_SLICES-}}${NEURON_RT_ROOT_COMM_ID:+ NEURON_RT_ROOT_COMM_ID=$NEURON_RT_ROOT_COMM_ID}${FI_PROVIDER:+ FI_PROVIDER=$FI_PROVIDER}"
}

__primus_neuron_layer
