"""Kueue's documented admission behaviour (tests/data/kueue/scenarios.yaml) reproduced by
dlsched's admission code, each scenario through real Kueue manifests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dlsched.tenancy.admission import Admission, Workload
from dlsched.tenancy.manifests import read_manifests
from tests.tenancy.kueue_manifests import documents, write

SCENARIOS = yaml.safe_load(
    (Path(__file__).parents[1] / "data" / "kueue" / "scenarios.yaml").read_text()
)
DOC_SECTIONS = {
    "CQ-RES",
    "CQ-COH",
    "CQ-BL",
    "CQ-LL",
    "CQ-QS",
    "CQ-PRE",
    "CQ-FF",
    "PRE-CL",
    "PRE-FS",
    "FS-ADM",
    "COH-H",
    "WL-ALL",
    "SCH",
}


def _workload(adm: Admission, spec: dict[str, Any], seq: int, created: float) -> Workload:
    requests = {"gpu": float(spec.get("gpu", 0)), "cpu": float(spec.get("cpu", 0))}
    return Workload(
        key=spec["name"],
        cq=adm.quota.index[spec["queue"]],
        priority=int(spec.get("priority", 0)),
        created=float(spec.get("created", created)),
        seq=seq,
        requests={k: v for k, v in requests.items() if v},
    )


def test_enough_scenarios_each_citing_the_docs() -> None:
    assert len(SCENARIOS) >= 25
    assert len({s["name"] for s in SCENARIOS}) == len(SCENARIOS)
    for s in SCENARIOS:
        assert s["doc"] in DOC_SECTIONS, s["name"]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_kueue_scenario(scenario: dict[str, Any], tmp_path: Path) -> None:
    path = write(
        tmp_path / "queues.yaml",
        documents(scenario["queues"], scenario.get("cohorts"), scenario.get("fair_sharing", False)),
    )
    adm = Admission(read_manifests(path))
    workloads: dict[str, Workload] = {}
    for i, spec in enumerate(scenario.get("running", [])):
        wl = _workload(adm, spec, i, float(i))
        assert adm.admit_now(wl, float(i)), f"running workload {spec['name']} does not fit"
        workloads[spec["name"]] = wl
    expect = scenario["expect"]
    never = set(expect.get("never", []))
    for i, spec in enumerate(scenario.get("pending", [])):
        wl = _workload(adm, spec, 1000 + i, 100.0 + i)
        workloads[spec["name"]] = wl
        reason = adm.never_admitted(wl)
        assert (reason is not None) == (spec["name"] in never), (spec["name"], reason)
        if reason is None:
            adm.submit(wl)
    results = adm.schedule(1000.0)
    admitted = {a.workload.key for a in results}
    victims = {e.workload.key: e.cause for a in results for e in a.evictions}
    assert admitted == set(expect.get("admitted", [])) - never
    assert victims == expect.get("victims", {})
    for name in victims:
        assert workloads[name].assignment is None
    borrowing = {a.workload.key for a in results if a.workload.borrows}
    assert borrowing == set(expect.get("borrowing", []))
    for name, flavor in expect.get("flavors", {}).items():
        assert workloads[name].flavors == (flavor,)
