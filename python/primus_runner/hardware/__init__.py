"""Host hardware as sysfs and /dev show it: GPUs, Neuron devices and their core
tables, NUMA placement. Reads files under PRIMUS_SYSFS_ROOT / PRIMUS_DEV_ROOT;
must not decide launch policy or import anything above the package's base modules.
"""
