"""Admission skips heads it proves hopeless: such a head must be one that neither fits nor
could be admitted by any preemption, and the per-tree sums behind the proof must stay exact."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from dlsched.tenancy.admission import FIT, NO_FIT, Admission, Workload
from dlsched.tenancy.manifests import read_manifests
from dlsched.tenancy.quota import EPS
from tests.tenancy.kueue_manifests import documents, write


def _admission(tmp_path: Path) -> Admission:
    queues: dict[str, dict[str, Any]] = {
        "a": {"gpu": 4, "cohort": "left", "reclaim": "Any", "within": "LowerPriority"},
        "b": {"gpu": 4, "cohort": "left", "borrow": 3, "reclaim": "LowerPriority"},
        "c": {
            "gpu": 6,
            "cohort": "right",
            "lend": 2,
            "reclaim": "Any",
            "borrow_within": "LowerPriority",
        },
        "d": {"gpu": 2, "cohort": "right"},
    }
    cohorts: dict[str, dict[str, Any]] = {
        "org": {},
        "left": {"parent": "org"},
        "right": {"parent": "org", "gpu": 2},
    }
    return Admission(read_manifests(write(tmp_path / "q.yaml", documents(queues, cohorts))))


def _borrower_usage_from_scratch(adm: Admission, root: int) -> dict[int, float]:
    quota = adm.quota
    out: dict[int, float] = {}
    for cq in range(len(adm.cqs)):
        if quota.root[cq] != root or not any(quota.borrowing(cq, fr) for fr in quota.usage[cq]):
            continue
        for fr, v in quota.usage[cq].items():
            out[fr] = out.get(fr, 0.0) + v
    return out


def test_hopeless_heads_could_not_be_admitted(tmp_path: Path) -> None:
    adm = _admission(tmp_path)
    rng = random.Random(3)
    running: list[Workload] = []
    hopeless_seen = 0
    seq = 0
    for step in range(300):
        now = float(step)
        if running and rng.random() < 0.4:
            adm.finish(running.pop(rng.randrange(len(running))))
        for _ in range(rng.randint(0, 2)):
            cq = rng.randrange(len(adm.cqs))
            gpus = float(rng.choice([1, 2, 4, 6]))
            seq += 1
            wl = Workload(seq, cq, rng.choice([0, 1, 2]), now, seq, {"gpu": gpus, "pods": 1.0})
            if adm.never_admitted(wl) is None:
                adm.submit(wl)
        for cq in range(len(adm.cqs)):
            for heap in adm.pending[cq].values():
                wl = heap[0][3]
                if not adm._hopeless(wl):
                    continue
                hopeless_seen += 1
                a = adm._assign(wl)
                assert a.mode != FIT
                assert a.mode == NO_FIT or not adm._targets(wl, a)
        for admitted in adm.schedule(now):
            evicted = [e.workload for e in admitted.evictions]
            running = [w for w in running if w not in evicted]
            for w in evicted:
                adm.submit(w)
            running.append(admitted.workload)
        for root, sums in adm._borrower_usage.items():
            expected = _borrower_usage_from_scratch(adm, root)
            for fr in set(sums) | set(expected):
                assert abs(sums.get(fr, 0.0) - expected.get(fr, 0.0)) < EPS
    assert hopeless_seen > 0
