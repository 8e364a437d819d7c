"""Kueue's metrics by Kueue's names: a simulated run's ``kueue_metrics.prom`` and the live
service's ``GET /metrics?format=prometheus`` parse as Prometheus text and count what the run
did (admissions, preemptions by Kueue's reason, usage against quotas)."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from dlsched.cluster.parse import resolve_cluster
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import simulate
from dlsched.trace.schema import Trace
from tests.tenancy.kueue_manifests import API, documents, write


def _samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return out


def _value(
    samples: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str
) -> float:
    found = [v for got, v in samples[name] if all(got.get(k) == w for k, w in labels.items())]
    assert len(found) == 1, (name, labels, samples.get(name))
    return found[0]


def test_a_run_with_queues_writes_kueue_metrics(tmp_path: Path) -> None:
    # Queue b lends its idle quota to a; b's later high-priority jobs reclaim it.
    docs = documents(
        {
            "a": {"gpu": 4, "cohort": "pool", "reclaim": "Any"},
            "b": {"gpu": 4, "cohort": "pool", "reclaim": "Any"},
        },
        {"pool": {}},
    )
    docs += [
        {"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": {"name": n}, "value": v}
        for n, v in (("high", 100), ("low", 1))
    ]
    queues = write(tmp_path / "queues.yaml", docs)
    queue_map = tmp_path / "map.toml"
    queue_map.write_text('[priority_class.user]\nhi = "high"\nlo = "low"\n')
    trace = Trace.from_columns(
        {
            "job_id": ["a1", "a2", "b1", "b2"],
            "submit_time": [0.0, 0.0, 100.0, 100.0],
            "num_gpus": [4, 4, 2, 2],
            "duration": [1000.0, 1000.0, 50.0, 50.0],
            "vc": ["a", "a", "b", "b"],
            "user": ["lo", "lo", "hi", "hi"],
        }
    )
    config = SimConfig(use_partitions=False, queues=str(queues), queue_map=str(queue_map))
    result = simulate(trace, resolve_cluster("1x8"), config)
    assert result.kueue_metrics is not None
    samples = _samples(result.kueue_metrics)
    # a borrowed b's 4 GPUs; b's first job reclaimed them (one eviction of a's borrower).
    assert _value(samples, "kueue_preempted_workloads_total", preempting_cluster_queue="b",
                  reason="InCohortReclamation") == 1  # fmt: skip
    assert _value(samples, "kueue_evicted_workloads_total", cluster_queue="a") == 1
    # a2 was admitted twice (before and after its eviction); every job finished.
    assert _value(samples, "kueue_admitted_workloads_total", cluster_queue="a") == 3
    assert _value(samples, "kueue_finished_workloads_total", cluster_queue="b") == 2
    assert _value(samples, "kueue_pending_workloads", cluster_queue="a", status="active") == 0
    nominal = {"flavor": "default-flavor", "resource": "nvidia.com/gpu", "cohort": "pool"}
    assert _value(samples, "kueue_cluster_queue_nominal_quota", cluster_queue="a", **nominal) == 4
    # b's jobs waited no time; the requeued a2 waited from its eviction to b's jobs' end.
    b_count = _value(samples, "kueue_admission_wait_time_seconds_count", cluster_queue="b")
    assert b_count == 2 and _value(
        samples, "kueue_admission_wait_time_seconds_sum", cluster_queue="b") == 0  # fmt: skip
    a_wait = _value(samples, "kueue_admission_wait_time_seconds_sum", cluster_queue="a")
    assert a_wait == 50.0
    buckets = [
        (float(labels["le"]), v)
        for labels, v in samples["kueue_admission_wait_time_seconds_bucket"]
        if labels["cluster_queue"] == "a"
    ]
    assert buckets == sorted(buckets) and buckets[-1][1] == 3
    assert _value(samples, "kueue_cohort_info", cohort="pool") == 1
