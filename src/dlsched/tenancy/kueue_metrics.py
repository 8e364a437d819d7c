"""Kueue's Prometheus metrics, by Kueue's names and labels, for an admission stage: a
dashboard built for a real cluster reads a simulated run (``kueue_metrics.prom`` in its run
directory) or the live service (``GET /metrics?format=prometheus``).

Names, labels and histogram buckets as Kueue's ``pkg/metrics`` (kubernetes-sigs/kueue at commit
ff69552e79ad21652c36caa97038382e55625cf7), without the ``replica_role`` and ``priority_class``
labels (one scheduler; priorities are numbers here). Gauges are the stage's state when written;
counters and the admission-wait histogram count from the stage's start. Quantities are in
Kueue's units: CPUs in cores, memory in bytes, the rest as counted.

- ``kueue_pending_workloads{cluster_queue, status="active"}``,
  ``kueue_admitted_active_workloads{cluster_queue}``,
  ``kueue_reserving_active_workloads{cluster_queue}``
- ``kueue_admitted_workloads_total{cluster_queue}``,
  ``kueue_quota_reserved_workloads_total{cluster_queue}``,
  ``kueue_finished_workloads_total{cluster_queue}``
- ``kueue_admission_wait_time_seconds{cluster_queue}`` (histogram: from arrival, or from the
  eviction that requeued it, to admission; equal to ``kueue_quota_reserved_wait_time_seconds``
  as there are no admission checks)
- ``kueue_preempted_workloads_total{preempting_cluster_queue, reason}``,
  ``kueue_evicted_workloads_total{cluster_queue, reason="Preempted", underlying_cause}``
- ``kueue_cluster_queue_resource_usage``, ``..._resource_reservation``,
  ``..._nominal_quota``, ``..._borrowing_limit``, ``..._lending_limit``
  ``{cohort, cluster_queue, flavor, resource}``
- ``kueue_cohort_subtree_quota``, ``kueue_cohort_subtree_resource_reservations``
  ``{cohort, flavor, resource}``; ``kueue_cluster_queue_info{cluster_queue, parent_cohort,
  root_cohort}`` and ``kueue_cohort_info{cohort, parent_cohort, root_cohort}``
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import numpy as np

from dlsched.tenancy.model import MEMORY, PREEMPTION_REASONS
from dlsched.tenancy.quantity import MIB

if TYPE_CHECKING:
    from dlsched.tenancy.quota import QuotaTree
    from dlsched.tenancy.stage import AdmissionStage

WAIT_BUCKETS = (1.0, *(2.5 * 2**i for i in range(15)))
"""Kueue's ``generateExponentialBuckets(16)``: 1, then 2.5 doubling 15 times (seconds)."""


class KueueCounters:
    """What Kueue's counters have counted, per ClusterQueue (numbered as the stage's queues):
    ``waits`` holds each admission's wait (its count is the admissions'; the histogram is made
    from it when written, so an admission costs one append)."""

    def __init__(self, queues: int) -> None:
        self.waits = [array("d") for _ in range(queues)]
        self.finished = [0] * queues
        self.preempted = [dict.fromkeys(PREEMPTION_REASONS, 0) for _ in range(queues)]
        self.evicted = [dict.fromkeys(PREEMPTION_REASONS, 0) for _ in range(queues)]

    def admitted(self, cq: int) -> int:
        return len(self.waits[cq])

    def histogram(self, cq: int) -> tuple[list[int], float]:
        """Cumulative counts of queue ``cq``'s waits at each of :data:`WAIT_BUCKETS` (waits
        at most the bound), and their sum."""
        waits = np.sort(np.frombuffer(self.waits[cq], dtype=np.float64))
        counts = np.searchsorted(waits, WAIT_BUCKETS, side="right")
        return [int(c) for c in counts], float(waits.sum())

    def preempt(self, preempting: int, victim: int, reason: str) -> None:
        self.preempted[preempting][reason] += 1
        self.evicted[victim][reason] += 1


def _labels(**pairs: str) -> str:
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in pairs.items())
    return "{" + inner + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _amount(resource: str, value: float) -> float:
    return value * MIB if resource == MEMORY else value


def _family(lines: list[str], name: str, kind: str, help_text: str) -> None:
    lines.append(f"# HELP kueue_{name} {help_text}")
    lines.append(f"# TYPE kueue_{name} {kind}")


def _quota_rows(
    quota: QuotaTree, node: int, values: dict[int, float]
) -> Iterable[tuple[str, str, float]]:
    for fr, value in sorted(values.items()):
        flavor, resource = quota.fr_names[fr]
        yield flavor, resource, _amount(resource, value)


def exposition(stage: AdmissionStage) -> str:
    """The stage's metrics in Prometheus's text format (module docstring)."""
    adm = stage.admission
    quota = adm.quota
    counters = stage.kueue
    names = stage.names
    n_cqs = len(names)
    lines: list[str] = []

    def parent_name(node: int) -> str:
        up = quota.parent[node]
        return "" if up is None else quota.names[up]

    def root_name(node: int) -> str:
        root = quota.root[node]
        return "" if root == node and node < n_cqs else quota.names[root]

    per_cq: tuple[tuple[str, str, str, Callable[[int], int], dict[str, str]], ...] = (
        ("admitted_active_workloads", "gauge", "Admitted active workloads per cluster_queue",
         lambda cq: len(adm.admitted[cq]), {}),
        ("reserving_active_workloads", "gauge", "Workloads reserving quota per cluster_queue",
         lambda cq: len(adm.admitted[cq]), {}),
        ("admitted_workloads_total", "counter", "Admitted workloads per cluster_queue",
         counters.admitted, {}),
        ("quota_reserved_workloads_total", "counter",
         "Workloads that reserved quota per cluster_queue", counters.admitted, {}),
        ("finished_workloads_total", "counter", "Finished workloads per cluster_queue",
         lambda cq: counters.finished[cq], {}),
    )  # fmt: skip
    _family(lines, "pending_workloads", "gauge", "Pending workloads per cluster_queue and status")
    for cq in range(n_cqs):
        for status, count in zip(("active", "inadmissible"), stage.pending(cq), strict=True):
            labels = _labels(cluster_queue=names[cq], status=status)
            lines.append(f"kueue_pending_workloads{labels} {count}")
    for name, kind, help_text, count_of, extra in per_cq:
        _family(lines, name, kind, help_text)
        for cq in range(n_cqs):
            lines.append(f"kueue_{name}{_labels(cluster_queue=names[cq], **extra)} {count_of(cq)}")
    _family(lines, "admission_wait_time_seconds", "histogram",
            "Time from creation or requeue until admission per cluster_queue")  # fmt: skip
    for cq in range(n_cqs):
        cumulative, waited = counters.histogram(cq)
        for bound, count in zip(WAIT_BUCKETS, cumulative, strict=True):
            labels = _labels(cluster_queue=names[cq], le=f"{bound:g}")
            lines.append(f"kueue_admission_wait_time_seconds_bucket{labels} {count}")
        admitted = counters.admitted(cq)
        labels = _labels(cluster_queue=names[cq], le="+Inf")
        lines.append(f"kueue_admission_wait_time_seconds_bucket{labels} {admitted}")
        plain = _labels(cluster_queue=names[cq])
        lines.append(f"kueue_admission_wait_time_seconds_sum{plain} {waited:g}")
        lines.append(f"kueue_admission_wait_time_seconds_count{plain} {admitted}")
    _family(lines, "preempted_workloads_total", "counter",
            "Preempted workloads per preempting_cluster_queue and reason")  # fmt: skip
    for cq in range(n_cqs):
        for reason, count in counters.preempted[cq].items():
            labels = _labels(preempting_cluster_queue=names[cq], reason=reason)
            lines.append(f"kueue_preempted_workloads_total{labels} {count}")
    _family(lines, "evicted_workloads_total", "counter",
            "Evicted workloads per cluster_queue and reason")  # fmt: skip
    for cq in range(n_cqs):
        count = sum(counters.evicted[cq].values())
        labels = _labels(cluster_queue=names[cq], reason="Preempted", underlying_cause="")
        lines.append(f"kueue_evicted_workloads_total{labels} {count}")
    gauges = (
        ("cluster_queue_resource_usage", "Resource usage per cluster_queue, flavor, resource",
         quota.usage),
        ("cluster_queue_resource_reservation",
         "Resource reservations per cluster_queue, flavor, resource", quota.usage),
        ("cluster_queue_nominal_quota", "Nominal quota per cluster_queue, flavor, resource",
         quota.nominal),
        ("cluster_queue_borrowing_limit", "Borrowing limit per cluster_queue, flavor, resource",
         quota.borrow_limit),
        ("cluster_queue_lending_limit", "Lending limit per cluster_queue, flavor, resource",
         quota.lend_limit),
    )  # fmt: skip
    for name, help_text, table in gauges:
        _family(lines, name, "gauge", help_text)
        for cq in range(n_cqs):
            values = {fr: v for fr, v in table[cq].items() if fr in quota.nominal[cq]}
            for flavor, resource, value in _quota_rows(quota, cq, values):
                labels = _labels(
                    cohort=parent_name(cq),
                    cluster_queue=names[cq],
                    flavor=flavor,
                    resource=resource,
                )
                lines.append(f"kueue_{name}{labels} {value:g}")
    cohorts = range(n_cqs, len(quota.names))
    for name, help_text, table in (
        ("cohort_subtree_quota", "Subtree quota per cohort, flavor, resource", quota.subtree),
        ("cohort_subtree_resource_reservations",
         "Resource reservations of a cohort's subtree per flavor, resource", quota.usage),
    ):  # fmt: skip
        _family(lines, name, "gauge", help_text)
        for node in cohorts:
            for flavor, resource, value in _quota_rows(quota, node, table[node]):
                labels = _labels(cohort=quota.names[node], flavor=flavor, resource=resource)
                lines.append(f"kueue_{name}{labels} {value:g}")
    _family(lines, "cluster_queue_info", "gauge", "A cluster_queue and its cohorts")
    for cq in range(n_cqs):
        labels = _labels(
            cluster_queue=names[cq], parent_cohort=parent_name(cq), root_cohort=root_name(cq)
        )
        lines.append(f"kueue_cluster_queue_info{labels} 1")
    _family(lines, "cohort_info", "gauge", "A cohort and its parent and root cohorts")
    for node in cohorts:
        labels = _labels(
            cohort=quota.names[node], parent_cohort=parent_name(node), root_cohort=root_name(node)
        )
        lines.append(f"kueue_cohort_info{labels} 1")
    return "\n".join(lines) + "\n"
