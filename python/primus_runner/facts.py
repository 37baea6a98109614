"""Facts shared with bash: generated from data/variables.yaml shared_facts by
python3 -m primus_runner.env.registry --write-json; do not edit."""
from __future__ import annotations

SECRET_NAMES = frozenset(['DATABRICKS_TOKEN', 'HF_TOKEN', 'WANDB_API_KEY'])
SECRET_SUFFIXES = ('_TOKEN', '_API_KEY', '_SECRET', '_PASSWORD', '_ACCESS_KEY', '_PRIVATE_KEY', '_CREDENTIALS', '_PAT')
SECRET_INFIXES = ('SECRET', 'PASSWORD', 'PASSWD')
SECRET_WORDS = frozenset(['TOKEN'])
SECRET_EXEMPT = ('PRIMUS_SECRET_*', '__PRIMUS_*')
LOG_LEVELS = {'DEBUG': 10, 'INFO': 20, 'WARN': 30, 'ERROR': 40}
LOG_LEVEL_DEFAULT = 'INFO'
LOG_SWITCH_ON = ('1',)
LOOPBACK_NAMES = ('localhost', 'localhost.localdomain', 'ip6-localhost', 'ip6-loopback')
ACCELERATORS = ('auto', 'rocm', 'cuda', 'neuron', 'cpu')
SRUN_NATIVE_ON = ('1', 'true', 'yes')
SRUN_NATIVE_OFF = ('0', 'false', 'no')
EXIT_OK = 0
EXIT_MISSING = 1
EXIT_INVALID = 2
EXIT_RUNTIME = 3
EXIT_HANG_STOPPED = 86
HOOK_EXIT_MISSING = 66
HOOK_EXIT_CONFIG = 78
DISTRIBUTED_DEFAULTS = {
    'MASTER_ADDR': 'localhost',
    'MASTER_PORT': '1234',
    'NNODES': '1',
    'NODE_RANK': '0',
    'GPUS_PER_NODE': '8',
}
GPU_MODELS = ('MI300X', 'MI325X', 'MI355X')
NODE_MODES = ('direct', 'container')
RUN_MODES = ('torchrun', 'single')
# The run monitor's thresholds (seconds, counts, shares).
MONITOR_TICK = 1.0
MONITOR_STILL_AFTER = 4.0
MONITOR_SAMPLE_GAP = 4.0
MONITOR_SETTLE_SAMPLES = 3
MONITOR_STOPPED_AFTER = 2.0
MONITOR_STOP_STOPPED_AFTER = 60.0
MONITOR_WORKING_AFTER = 60.0
MONITOR_WORKING_REPEAT = 600.0
MONITOR_STRAGGLER_ROUND_S = 30.0
MONITOR_STRAGGLER_OTHERS_MIN = 0.15
MONITOR_STRAGGLER_THRESHOLD = 0.2
MONITOR_STRAGGLER_ROUNDS = 3
MONITOR_STRAGGLER_TABLE_ROUNDS = 4
# Checked by the launch helper's first step (registry type, min, max):
# name -> (default or None, min or None, max or None).
CHECKED_BEFORE_VERDICT = {
    'PRIMUS_KILL_GRACE': ('10', None, 99999),
    'PRIMUS_HOOK_TIMEOUT': ('1800', None, 999999999),
    'PRIMUS_NEURON_CORES_PER_PROC': (None, 1, None),
    'PRIMUS_PEER_WAIT_TIMEOUT': ('600', 0, None),
}
