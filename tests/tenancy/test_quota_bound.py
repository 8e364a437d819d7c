"""The quota tree's free bound: kept as usage changes, never below what a node may take."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from dlsched.tenancy.manifests import read_manifests
from dlsched.tenancy.quota import EPS, QuotaTree
from tests.tenancy.kueue_manifests import documents, write


def _tree(tmp_path: Path) -> QuotaTree:
    queues: dict[str, dict[str, Any]] = {
        "a": {"gpu": 4, "cohort": "left", "lend": 2},
        "b": {"gpu": 4, "cohort": "left", "borrow": 3},
        "c": {"gpu": 6, "cohort": "right", "lend": 1},
        "d": {"gpu": 2, "cohort": "right"},
        "solo": {"gpu": 3},
    }
    cohorts: dict[str, dict[str, Any]] = {
        "org": {},
        "left": {"parent": "org", "gpu": 2, "lend": 1},
        "right": {"parent": "org"},
    }
    path = write(tmp_path / "q.yaml", documents(queues, cohorts))
    return QuotaTree(read_manifests(path))


def _slack_from_scratch(tree: QuotaTree, root: int, fr: int) -> float:
    return sum(
        max(0.0, tree.guaranteed[n].get(fr, 0.0) - tree.usage[n].get(fr, 0.0))
        for n in range(len(tree.names))
        if tree.root[n] == root and n != root
    )


def test_free_bound_tracks_usage_and_bounds_available(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    fr = next(iter(tree.frs.values()))
    cqs = range(len(tree.cq_names))
    # The lending limits give guaranteed parts, so the bound has slack to keep.
    assert tree.slack[tree.root[0]][fr] > 0
    rng = random.Random(1)
    held: list[tuple[int, float]] = []
    for step in range(400):
        if held and (rng.random() < 0.45 or step % 50 == 49):
            cq, amount = held.pop(rng.randrange(len(held)))
            tree.remove(cq, {fr: amount})
        else:
            cq = rng.choice(cqs)
            amount = float(rng.choice([1, 2, 3]))
            if not tree.fits(cq, {fr: amount}):
                continue
            tree.add(cq, {fr: amount})
            held.append((cq, amount))
        for node in cqs:
            root = tree.root[node]
            assert abs(tree.slack[root][fr] - _slack_from_scratch(tree, root, fr)) < EPS
            assert tree.available(node, fr) <= tree.free_bound(root, fr) + EPS
