"""Summary figures a run adds per job kind: how many jobs of each kind, which policy scheduled
them, and for elastic jobs finish-time fairness.

Finish-time fairness (Themis; Mahajan et al., NSDI'20): per finished elastic job
``rho = JCT / isolated JCT``, the isolated JCT being its run alone on its requested GPUs
(consolidated, on the cluster's most common GPU type) at its requested batch, plus its first
start's restart cost.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from dlsched.cluster.state import ClusterState
from dlsched.metrics.jobs import JobRecords
from dlsched.perf.elastic_progress import ElasticModel, ElasticState, table_rate
from dlsched.perf.model import KIND_NAMES, ProgressModel
from dlsched.sim.job import SimJob


def kind_summary(
    kinds: Sequence[int],
    records: JobRecords,
    policies: Mapping[str, str],
    elastic_jobs: Sequence[SimJob],
    model: ProgressModel | None,
    state: ClusterState,
    first_start_s: float,
) -> dict[str, Any]:
    """``job_kinds`` (rows per kind), ``kind_policies`` (the policy of each kind present) and
    ``ftf_rho_mean``/``ftf_rho_max`` over finished elastic jobs (null without any)."""
    counts = Counter(kinds)
    out: dict[str, Any] = {
        "job_kinds": {name: counts.get(k, 0) for k, name in enumerate(KIND_NAMES)},
        "kind_policies": dict(policies),
        "ftf_rho_mean": None,
        "ftf_rho_max": None,
    }
    if not isinstance(model, ElasticModel):
        return out
    sizes: dict[str, int] = {}
    per_node: dict[str, int] = {}
    for node, gpus in enumerate(state.node_gpus):
        if gpus:
            variant = model.node_variants[node]
            sizes[variant] = sizes.get(variant, 0) + gpus
            per_node[variant] = max(per_node.get(variant, 0), gpus)
    if not sizes:
        return out
    order = list(sizes)
    main = max(order, key=lambda v: (sizes[v], -order.index(v)))
    rhos = []
    for job in elastic_jobs:
        if not records.finished[job.row]:
            continue
        ext: ElasticState = job.ext
        if ext.tables is not None:
            alone = ext.eff.total_progress / table_rate(ext.tables, (main,), ext.requested_gpus)
        else:
            alone = model.perf.isolated_time(
                ext.application, main, ext.requested_gpus, ext.requested_bsz, per_node[main]
            )
        rhos.append((job.end - job.submit_time) / (alone + first_start_s))
    if rhos:
        out["ftf_rho_mean"] = sum(rhos) / len(rhos)
        out["ftf_rho_max"] = max(rhos)
    out["gpu_types"] = sizes
    return out
