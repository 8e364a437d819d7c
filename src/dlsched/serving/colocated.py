"""Serving beside training on one cluster, through the one simulation core.

The autoscaler (:mod:`.autoscale`) turns a request trace into replica jobs; they join the
training trace (ids ``serve:...`` and ``train:...``, :func:`~dlsched.trace.transforms.
merge_traces`) and the cluster simulator runs both under one policy — with ``serving-first``
replicas preempt training through the same Plan, paying its restart costs; with ``fifo`` they
queue like any job. Each replica job that ran becomes one replica instance, ready a cold start
after its start: requests go round robin to the instances ready at their arrival (to the next
one to become ready when none is), and each instance is simulated by the replica simulator.
An instance finishes the requests it took even past its job's end (those of its last
seconds; not charged to the cluster). Requests that no instance ever takes are not served.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.compute as pc

from dlsched.cluster.spec import ClusterSpec
from dlsched.policy.serving_first import SERVING_PREFIX
from dlsched.progress import ProgressFn
from dlsched.serving.arrivals import Lengths, synthetic_requests
from dlsched.serving.autoscale import Autoscaler, replica_jobs
from dlsched.serving.cluster import ServingRun, gather, request_columns, simulate_serving
from dlsched.serving.config import ReplicaConfig
from dlsched.serving.energy import ServingPower
from dlsched.serving.log import ServingLog
from dlsched.serving.metrics import Slo, serving_summary
from dlsched.serving.perf.model import IterationModel
from dlsched.serving.replica import ReplicaSamples, simulate_replica
from dlsched.serving.requests import RequestTrace
from dlsched.sim.config import PowerConfig, SimConfig
from dlsched.trace.schema import Trace
from dlsched.trace.transforms import merge_traces

if TYPE_CHECKING:
    from dlsched.sim.simulator import RunResult

TRAIN_PREFIX = "train:"


@dataclass(frozen=True)
class ColocatedRun:
    """The serving side (its run over the replica instances) and the cluster run."""

    serving: ServingRun
    cluster: RunResult
    plan: tuple[int, ...]
    instances: tuple[tuple[float, float], ...]  # (ready, end) of each replica instance
    tp: int


def measure_capacity(
    trace: RequestTrace,
    model: IterationModel,
    config: ReplicaConfig,
    slo: Slo,
    target: float = 0.9,
    requests: int = 2000,
    seed: int = 0,
) -> float:
    """Highest Poisson arrival rate (req/s, to 5%) at which one replica meets ``slo`` for a
    ``target`` fraction of requests with lengths drawn from ``trace``; ValueError when even
    0.01 req/s does not."""
    lengths = Lengths(trace)

    def attained(rate: float) -> float:
        sample = synthetic_requests(rate, count=requests, lengths=lengths, seed=seed)
        run = simulate_serving(sample, model, config)
        value = serving_summary(run, slo)["slo_attainment"]
        return float(value) if value is not None else 0.0

    low, high = 0.01, 1.0
    if attained(low) < target:
        raise ValueError(f"one replica cannot meet the SLO for {target:.0%} even at 0.01 req/s")
    while attained(high) >= target:
        low, high = high, high * 2
    while high / low > 1.05:
        middle = math.sqrt(low * high)
        low, high = (middle, high) if attained(middle) >= target else (low, middle)
    return low


def run_colocated(
    requests: RequestTrace,
    training: Trace,
    cluster: ClusterSpec,
    scaler: Autoscaler,
    model: IterationModel,
    config: ReplicaConfig,
    tp: int,
    policy: str,
    progress: ProgressFn | None = None,
) -> ColocatedRun:
    """Serve ``requests`` with autoscaled replicas beside ``training`` on ``cluster`` under
    ``policy`` (``serving-first`` or any policy of the catalog). ``progress`` counts the
    cluster's jobs finished, then requests settled, of both together. Deterministic."""
    # The cluster simulator loads for a run beside training only, not for serving alone.
    from dlsched.sim.simulator import simulate

    plan = scaler.plan(requests)
    # Training first: at equal submit times FIFO then favours training, never serving.
    merged = merge_traces(
        [("train", training), (SERVING_PREFIX.rstrip(":"), replica_jobs(plan, scaler, tp))]
    )
    jobs_done, requests_done = _two_phases(progress, len(merged), len(requests))
    result = simulate(
        merged, cluster, SimConfig(policy=policy, use_partitions=False), progress=jobs_done
    )
    jobs = result.jobs
    serving = pc.starts_with(jobs.column("job_id"), SERVING_PREFIX)
    starts = jobs.filter(serving).column("first_start_s").to_numpy(zero_copy_only=False)
    ends = jobs.filter(serving).column("end_s").to_numpy(zero_copy_only=False)
    instances = sorted(
        (float(s) + scaler.cold_start_s, float(e))
        for s, e in zip(starts, ends, strict=True)
        if not math.isnan(s) and not math.isnan(e) and s + scaler.cold_start_s < e
    )
    run = serve_on_instances(requests, instances, model, config, requests_done)
    return ColocatedRun(run, result, tuple(plan), tuple(instances), tp)


def serve_on_instances(
    requests: RequestTrace,
    instances: list[tuple[float, float]],
    model: IterationModel,
    config: ReplicaConfig,
    progress: ProgressFn | None = None,
) -> ServingRun:
    """Serve ``requests`` on replica instances that each take requests from ``ready`` until
    ``end`` (``(ready, end)`` pairs sorted by ``ready``; module docstring), reporting
    requests settled to ``progress``."""
    columns = request_columns(requests)
    owners = _route(np.asarray(columns.arrivals), instances)
    log = ServingLog(len(requests), progress=progress)
    samples = ReplicaSamples()
    blocks = [
        simulate_replica(
            k,
            np.flatnonzero(owners == k).tolist(),
            columns,
            config,
            model,
            log,
            samples,
            start=ready,
        )
        for k, (ready, _) in enumerate(instances)
    ]
    return gather(requests, config, log, samples, blocks)


def autoscaled_serving(
    requests: RequestTrace,
    scaler: Autoscaler,
    model: IterationModel,
    config: ReplicaConfig,
    progress: ProgressFn | None = None,
) -> tuple[ServingRun, list[tuple[float, float]]]:
    """Serve ``requests`` on the replicas ``scaler`` plans, each ready a cold start after its
    first window begins and serving until its last window ends, on a cluster that always has
    GPUs for them. Returns the run and the replicas' ``(start, end)`` (GPUs held, cold start
    included). Deterministic."""
    jobs = replica_jobs(scaler.plan(requests), scaler, tp=1)
    submits = jobs.column("submit_time").to_pylist()
    durations = jobs.column("duration").to_pylist()
    held = sorted((s, s + d) for s, d in zip(submits, durations, strict=True))
    instances = sorted((s + scaler.cold_start_s, e) for s, e in held if s + scaler.cold_start_s < e)
    return serve_on_instances(requests, instances, model, config, progress), held


def _two_phases(
    progress: ProgressFn | None, first: int, second: int
) -> tuple[ProgressFn | None, ProgressFn | None]:
    """Callbacks for a phase of ``first`` units then one of ``second``, each reporting to
    ``progress`` the units done of both together."""
    if progress is None:
        return None, None
    report, total = progress, first + second
    return (lambda done, _: report(done, total)), (lambda done, _: report(first + done, total))


def _route(times: np.ndarray, instances: list[tuple[float, float]]) -> np.ndarray:
    """The instance of each request (-1: none ever ready at or after its arrival)."""
    owners = np.full(len(times), -1, dtype=np.int64)
    ready = np.array([r for r, _ in instances])
    end = np.array([e for _, e in instances])
    turn = 0
    for i, t in enumerate(times.tolist()):
        active = np.flatnonzero((ready <= t) & (end > t))
        if len(active):
            owners[i] = active[turn % len(active)]
            turn += 1
            continue
        later = np.flatnonzero(ready > t)
        if len(later):
            owners[i] = later[np.argmin(ready[later])]
    return owners


def training_summary(run: ColocatedRun, power: ServingPower) -> dict[str, Any]:
    """Training jobs' figures in the shared run: finished count, JCT mean/median/p95 (s),
    preemptions; cluster GPU utilization and energy, every job included. In ``energy_kwh`` the
    replicas' GPUs draw ``power`` by their utilization (idle power while held, the extra only
    for the seconds they run iterations) where the cluster simulation charged them busy power
    for every second held; ``cluster_energy_kwh`` is that simulation's own figure."""
    jobs = run.cluster.jobs
    train = jobs.filter(pc.starts_with(jobs.column("job_id"), TRAIN_PREFIX))
    jct = train.column("jct_s").to_numpy(zero_copy_only=False)
    done = jct[~np.isnan(jct)]
    summary = run.cluster.summary
    return {
        "training_jobs": train.num_rows,
        "training_finished": len(done),
        "training_avg_jct_s": float(done.mean()) if len(done) else None,
        "training_median_jct_s": float(np.median(done)) if len(done) else None,
        "training_p95_jct_s": float(np.percentile(done, 95)) if len(done) else None,
        "training_preemptions": int(pc.sum(train.column("preemptions")).as_py() or 0),
        "gpu_utilization": summary.get("gpu_utilization"),
        "energy_kwh": _energy_by_utilization(run, power),
        "cluster_energy_kwh": summary.get("energy_kwh"),
        "replica_windows": sum(run.plan),
        "replica_instances": len(run.instances),
    }


def _energy_by_utilization(run: ColocatedRun, power: ServingPower) -> float | None:
    """The cluster's energy (kWh) with the replicas' busy draw replaced by ``power``'s extra
    for the iterations they ran (:func:`training_summary`)."""
    cluster_kwh = run.cluster.summary.get("energy_kwh")
    if cluster_kwh is None:
        return None
    jobs = run.cluster.jobs
    replicas = jobs.filter(pc.starts_with(jobs.column("job_id"), SERVING_PREFIX))
    held_gpu_s = float(pc.sum(replicas.column("gpu_seconds")).as_py() or 0.0)
    # run_colocated simulates with the default power model, so that is what it charged.
    charged = PowerConfig().busy_extra_w_per_gpu * held_gpu_s
    ran = power.busy_extra_w * run.tp * float(sum(run.serving.log.busy))
    return (float(cluster_kwh) * 3.6e6 - charged + ran) / 3.6e6
