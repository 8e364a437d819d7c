"""A PS workload: arrival times and GPU requests from the bundled Philly trace, networks from
the zoo.

Jobs are the trace's jobs in submit order from ``start``, their arrivals rebased to the first
and multiplied by ``time_scale`` (below 1 compresses them: more load). Each job's network is
drawn with :data:`MODEL_MIX` from a seeded generator. Its work is the number of samples it
would process in its trace duration (clipped to ``[min_s, max_s]``) at its requested shape
running alone; its requested workers are the trace's GPUs (at most ``max_workers``) and its
requested PS ``max(1, workers // 2)``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from dlsched.ps.job import PsJob
from dlsched.ps.machines import Machine
from dlsched.ps.objective import sample_time
from dlsched.ps.placement import capacity
from dlsched.ps.policy_base import first_fit
from dlsched.ps.zoo import network
from dlsched.trace import bundled_trace_path, read_trace
from dlsched.trace.schema import Trace

MODEL_MIX: Mapping[str, float] = MappingProxyType(
    {
        "resnet50": 0.25,
        "inception_v3": 0.2,
        "vgg16": 0.15,
        "bert_base": 0.15,
        "transformer_base": 0.22,
        "gpt2_xl": 0.03,  # does not fit a 16-GiB GPU: reported as infeasible
    }
)
DEFAULT_TRACE = "philly_jobs_2000"


def build_workload(
    count: int,
    machines: tuple[Machine, ...],
    seed: int = 0,
    trace: str = DEFAULT_TRACE,
    start: int = 0,
    time_scale: float = 1.0,
    min_s: float = 120.0,
    max_s: float = 4 * 3600.0,
    max_workers: int = 8,
    max_servers: int = 4,
) -> tuple[PsJob, ...]:
    """``count`` jobs (module docstring); ``trace`` is a trace file or a bundled trace's name.
    ValueError if the trace holds fewer jobs from ``start``."""
    if count < 1 or time_scale <= 0 or not 0 < min_s <= max_s:
        raise ValueError("need count >= 1, time_scale > 0 and 0 < min_s <= max_s")
    source = Path(trace) if Path(trace).is_file() else bundled_trace_path(trace)
    table = read_trace(source).trace.table
    if start < 0 or start + count > table.num_rows:
        raise ValueError(
            f"trace {trace!r} has {table.num_rows} jobs; cannot take {count} from {start}"
        )
    rows = table.slice(start, count).to_pylist()
    rng = random.Random(seed)
    names = list(MODEL_MIX)
    weights = list(MODEL_MIX.values())
    origin = rows[0]["submit_time"]
    jobs = []
    for row in rows:
        net = network(rng.choices(names, weights)[0])
        workers = max(1, min(int(row["num_gpus"]), max_workers))
        servers = max(1, min(workers // 2, max_servers))
        duration = min(max(float(row["duration"] or min_s), min_s), max_s)
        probe = PsJob(
            str(row["job_id"]),
            net,
            net.batch,
            1.0,
            0.0,
            1.0,
            workers,
            servers,
            max_workers,
            max_servers,
        )
        option = first_fit(probe, workers, servers, machines, capacity(machines))
        if option is None:
            option = first_fit(probe, 1, 1, machines, capacity(machines))
        seconds = (
            sample_time(probe, option, machines, option.tasks()) if option is not None else 1e-3
        )
        jobs.append(
            PsJob(
                str(row["job_id"]),
                net,
                net.batch,
                duration / seconds,
                (row["submit_time"] - origin) * time_scale,
                1.0,
                workers,
                servers,
                max_workers,
                max_servers,
            )
        )
    return tuple(jobs)


def workload_trace(jobs: tuple[PsJob, ...], source: str = "ps-workload") -> Trace:
    """``jobs`` as a canonical trace of ``ps`` rows (network, per-worker batch, samples,
    requested and maximum workers and PS), for the simulator."""
    return Trace.from_columns(
        {
            "job_id": [j.job_id for j in jobs],
            "submit_time": [j.arrival for j in jobs],
            "num_gpus": [j.requested_workers for j in jobs],
            "application": [j.network.name for j in jobs],
            "batch_size": [j.batch for j in jobs],
            "work": [j.samples for j in jobs],
            "work_unit": ["samples"] * len(jobs),
            "kind": ["ps"] * len(jobs),
            "num_servers": [j.requested_servers for j in jobs],
            "max_gpus": [j.max_workers for j in jobs],
            "max_servers": [j.max_servers for j in jobs],
        },
        source,
    )
