"""RDMA HCA, RoCE GID index and socket interface detection (docs/configuration.md "Environment layers").

The package is split along its seams: ``common`` (readers), ``routes`` (route
table, local addresses, name resolution), ``interfaces`` (socket interface
choice, NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME syntax), ``hca`` (RDMA ports,
NCCL_IB_HCA), ``gids`` (RoCE GID types and NCCL_IB_GID_INDEX), ``detect``
(everything in one pass), ``cli`` (the command line) and ``check`` (the user's values against
this host). Each module's docstring states its rules.
"""
from __future__ import annotations

from primus_runner.network.cli import main
from primus_runner.network.common import DEFAULT_HCA_EXCLUDE
from primus_runner.network.detect import (
    ENV_VARS,
    NicResult,
    choose_gid_index,
    detect_nics,
)
from primus_runner.network.gids import DEFAULT_GID_INDEX
from primus_runner.network.hca import HcaPort, choose_hcas, read_ports
from primus_runner.network.interfaces import (
    DEFAULT_SOCKET_EXCLUDE,
    Interface,
    choose_interface,
)
from primus_runner.network.routes import (
    Route,
    local_addresses,
    local_addresses_from_proc,
    read_routes,
    resolve_ipv4,
    resolves,
)

__all__ = ["DEFAULT_GID_INDEX", "DEFAULT_HCA_EXCLUDE", "DEFAULT_SOCKET_EXCLUDE", "ENV_VARS",
           "HcaPort", "Interface", "NicResult", "Route", "choose_gid_index", "choose_hcas",
           "choose_interface", "detect_nics", "local_addresses", "local_addresses_from_proc",
           "main", "read_ports", "read_routes", "resolve_ipv4", "resolves"]
