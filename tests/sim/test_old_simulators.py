"""The one simulation core reproduces the simulators it replaced.

``tests/data/golden/old_simulators.json`` holds the figures of the old elastic (60-s rounds) and
parameter-server simulators, produced at commit 791c7ba before they were deleted (its header
says how). Where semantics are unchanged the core gives the same numbers to 1e-6 relative:

- Pollux workloads under Tiresias (placement ``pack``, as the old elastic Tiresias placed, and
  ``order=submit``, its order inside a queue; the default now keeps running jobs first), and
  Pollux with ``epoch_buckets=10 base=one`` (its old speedups; the default now follows the
  Pollux artifact),
  Optimus with ``remaining=epochs`` and Pollux: average JCT, makespan, average queueing,
  finish-time fairness and restart/preemption counts;
- the 200-job SMD workload under SMD, Optimus and FIFO: every job's JCT, and the same jobs set
  aside for the same reason.

Runs the header lists as deliberate differences (elastic FIFO, PS Tiresias, ONES, placement
``consolidate`` for Tiresias) are not asserted here; ``bench/core_equivalence.py`` reports them.
The default run checks the fast cases; the others are marked slow. Pollux workloads other than
the bundled workload-6 come from the shared traces beside the project and are skipped without
them.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from dlsched.cluster.parse import resolve_cluster
from dlsched.ps.machines import uniform_machines
from dlsched.ps.workload import build_workload, workload_trace
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import simulate
from dlsched.trace.bundled import bundled_trace_path
from dlsched.trace.read import read_trace
from dlsched.trace.schema import Trace
from tests.trace.helpers import TRACES

GOLDEN_PATH = Path(__file__).resolve().parents[1] / "data" / "golden" / "old_simulators.json"
GOLDEN: dict[str, Any] = json.loads(GOLDEN_PATH.read_text())
REL = 1e-6
EQUAL_ELASTIC = ("pollux", "optimus", "tiresias")
"""Elastic policies whose runs the core reproduces (FIFO and ONES differ by design)."""
FAST = {
    ("workloads", 6, "pollux"),
    ("workloads", 3, "optimus"),
    ("workloads", 6, "optimus"),
}
"""Allocation-policy runs checked by default (workload-6 is bundled); every Tiresias run is
fast (well under a second) and checked by default too."""


def workload_path(load: str, workload: int) -> Path:
    """The Pollux workload file; workload-6 at load 1.0 is bundled with dlsched."""
    if (load, workload) == ("workloads", 6):
        return bundled_trace_path("pollux_workload-6")
    return TRACES / "pollux-workloads" / load / f"workload-{workload}.csv"


@functools.cache
def workload_trace_of(load: str, workload: int) -> Trace:
    return read_trace(workload_path(load, workload)).trace


def label(run: dict[str, Any]) -> str:
    opts = "".join(f"-{k}={v}" for k, v in sorted(run["options"].items()))
    return f"{run['load']}-w{run['workload']}-{run['policy']}{opts}-s{run['seed']}"


def elastic_case(run: dict[str, Any]) -> Any:
    marks = []
    if run["policy"] != "tiresias" and (run["load"], run["workload"], run["policy"]) not in FAST:
        marks.append(pytest.mark.slow)
    path = workload_path(run["load"], run["workload"])
    if not path.is_file():
        marks.append(pytest.mark.skip(reason=f"{path} is not available (shared traces)"))
    return pytest.param(run, marks=marks, id=label(run))


ELASTIC_RUNS = [r for r in GOLDEN["elastic"]["runs"] if r["policy"] in EQUAL_ELASTIC]


def test_the_golden_file_covers_every_reference() -> None:
    runs = GOLDEN["elastic"]["runs"]
    assert len(runs) == 112
    for policy in EQUAL_ELASTIC:
        for load in ("workloads", "workloads-0.5"):
            assert {
                r["workload"] for r in runs if (r["policy"], r["load"]) == (policy, load)
            } == set(range(1, 9))
    ones = [r for r in runs if r["policy"] == "ones"]
    assert sorted({r["seed"] for r in ones}) == [0, 1, 2, 3, 4] and len(ones) == 40
    assert set(GOLDEN["ps"]["policies"]) == {"smd", "optimus", "fifo", "tiresias"}
    assert "791c7ba" in GOLDEN["header"]["produced_at"]
    # The placement the equal Tiresias runs need is named where a reader looks for it.
    assert "'pack'" in GOLDEN["header"]["new_core"]


@pytest.mark.parametrize("run", [elastic_case(r) for r in ELASTIC_RUNS])
def test_elastic_runs_match(run: dict[str, Any]) -> None:
    placement = "pack" if run["policy"] == "tiresias" else "consolidate"
    options = dict(run["options"])
    if run["policy"] == "tiresias":
        options["order"] = "submit"
    if run["policy"] == "pollux":
        # The old speedups: statistics of the start of each tenth of training, one GPU as base.
        options.update(epoch_buckets="10", base="one")
    config = SimConfig(
        policy=run["policy"],
        policy_options=options,
        seed=run["seed"],
        placement=placement,
    )
    trace = workload_trace_of(run["load"], run["workload"])
    summary = simulate(trace, resolve_cluster(GOLDEN["elastic"]["cluster"]), config).summary
    assert (summary["jobs"], summary["jobs_set_aside"]) == (run["jobs"], 0)
    for figure in GOLDEN["elastic"]["figures"]:
        if figure in ("preemptions", "restarts"):
            assert summary[figure] == run[figure], figure
        else:
            assert summary[figure] == pytest.approx(run[figure], rel=REL), figure


@functools.cache
def ps_trace() -> Trace:
    w = GOLDEN["ps"]["workload"]
    machines = uniform_machines(w["machines"], gpus=w["gpus_per_machine"])
    jobs = build_workload(w["jobs"], machines, seed=w["seed"], time_scale=w["time_scale"])
    return workload_trace(jobs)


@pytest.mark.parametrize("policy", [pytest.param("smd", marks=pytest.mark.slow), "optimus", "fifo"])
def test_ps_runs_match_job_by_job(policy: str) -> None:
    golden = GOLDEN["ps"]["policies"][policy]
    result = simulate(
        ps_trace(), resolve_cluster(GOLDEN["ps"]["cluster"]), SimConfig(policy=policy)
    )
    rows = result.jobs.to_pylist()
    assert [r["job_id"] for r in rows] == list(golden["jct_s"])
    for r in rows:
        old = golden["jct_s"][r["job_id"]]
        if old is None:
            assert r["status"] == "set_aside"
            assert r["reason"] == golden["set_aside"][r["job_id"]]
        else:
            assert r["status"] == "finished"
            assert r["jct_s"] == pytest.approx(old, rel=REL), r["job_id"]
    assert result.summary["avg_jct_s"] == pytest.approx(golden["mean_jct_s"], rel=REL)
