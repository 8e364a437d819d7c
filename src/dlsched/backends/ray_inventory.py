"""Write a dlsched cluster file from a Ray cluster's inventory.

``python -m dlsched.backends.ray_inventory cluster.toml [--address ADDR] [--with-empty]
[--force]``
connects to the cluster (``--address``, else ``$RAY_ADDRESS``), reads ``ray.nodes()`` and writes
the live nodes that declare a dlsched name (``dlsched-node:<name>``), with their GPU counts and
types, as the cluster the service plans on (see :mod:`dlsched.backends.ray_backend`). Nodes
without GPUs (a head kept for control) are left out unless ``--with-empty``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from dlsched.backends.ray_backend import inventory_of
from dlsched.backends.ray_runner import ray_nodes
from dlsched.cluster.spec import ClusterSpec
from dlsched.cluster.toml_io import CLUSTER_FILE, write_cluster_toml
from dlsched.outdir import OutputError


def main(argv: Sequence[str] | None = None) -> int:
    """Write the cluster file (see the module docstring); 1 if no node declares a name."""
    p = argparse.ArgumentParser(
        prog="python -m dlsched.backends.ray_inventory",
        description="Write a dlsched cluster file from a Ray cluster's inventory.",
    )
    p.add_argument("out", type=Path, help="cluster file to write (.toml)")
    p.add_argument("--address", default=None, help="Ray cluster address (default $RAY_ADDRESS)")
    p.add_argument("--name", default="ray", help="cluster name (default ray)")
    p.add_argument("--with-empty", action="store_true", help="keep nodes without GPUs")
    p.add_argument("--force", action="store_true", help="replace an existing cluster file")
    args = p.parse_args(argv)
    try:
        CLUSTER_FILE.check(args.out, args.force)
    except OutputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    address = args.address or os.environ.get("RAY_ADDRESS")
    if not address:
        print("error: give --address or set RAY_ADDRESS", file=sys.stderr)
        return 2
    ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
    try:
        spec = inventory_of(ray_nodes(), args.name)
    finally:
        ray.shutdown()
    nodes = tuple(n for n in spec.nodes if n.gpus or args.with_empty)
    if not nodes:
        print("error: no live Ray node declares a dlsched-node:<name> resource", file=sys.stderr)
        return 1
    path = write_cluster_toml(ClusterSpec(spec.name, nodes), args.out)
    for n in nodes:
        print(f"{n.name}: {n.gpus} x {n.gpu_type}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
