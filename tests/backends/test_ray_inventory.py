"""Reading dlsched's cluster from ``ray.nodes()`` records (no cluster needed; the Ray tests check
the same against a real one)."""

from __future__ import annotations

from typing import Any

from dlsched.backends.ray_backend import inventory_of


def node(alive: bool, gpus: float, **custom: float) -> dict[str, Any]:
    resources = {"CPU": 1.0, "node:127.0.0.1": 1.0, **custom}
    if gpus:
        resources["GPU"] = gpus
    return {"Alive": alive, "Resources": resources}


def test_live_named_nodes_with_their_gpu_counts_and_types() -> None:
    nodes = [
        node(True, 4, **{"dlsched-node:b": 1000, "dlsched-gpu:v100": 4}),
        node(True, 2, **{"dlsched-node:a": 1000}),
        node(False, 8, **{"dlsched-node:dead": 1000, "dlsched-gpu:a100": 8}),
        node(True, 8),  # no dlsched name: not dlsched's to plan on
    ]
    spec = inventory_of(nodes, "c")
    assert spec.name == "c"
    assert [(n.name, n.gpus, n.gpu_type) for n in spec.nodes] == [("a", 2, "gpu"), ("b", 4, "v100")]


def test_no_named_node_gives_an_empty_cluster() -> None:
    assert inventory_of([node(True, 4)]).nodes == ()
