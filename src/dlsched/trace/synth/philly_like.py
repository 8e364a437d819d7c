"""Synthetic job traces shaped like Microsoft Philly, for benchmarks and tests at any size.

The defaults are fitted on ``philly_jobs.csv`` (82,247 jobs, 2017-09-04..12-22, 15 VCs):

* Arrivals: a Poisson process (exponential inter-arrival times) at 0.00874 jobs/s, the trace's
  mean rate (82,247 jobs over 108.9 days, about 31 per hour). A Poisson process is the usual
  memoryless model of many independent users; it ignores the trace's daily and weekly cycles.
* GPUs per job: the trace's empirical distribution, 93% of jobs ask for 1 GPU, then 2, 4 and 8
  about 2% each, and a thin tail up to 128. The 7 jobs asking for 12 GPUs are counted as 16 and
  the 7 asking for 24 as 32, keeping the sizes powers of two.
* Durations: log-normal, the log of the run time in seconds having mean 6.79 and standard
  deviation 2.16, the moments of log(duration_s) in the trace (median exp(6.79) = 889 s). Run
  times span seconds to weeks; a log-normal matches that spread with two parameters.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dlsched.trace.schema import Trace

PHILLY_ARRIVAL_RATE = 0.00874
PHILLY_GPU_COUNTS: tuple[tuple[int, int], ...] = (
    (1, 76627),
    (2, 1818),
    (4, 1870),
    (8, 1643),
    (16, 206),
    (32, 74),
    (64, 6),
    (128, 3),
)
PHILLY_LOG_DURATION_MEAN = 6.79
PHILLY_LOG_DURATION_SIGMA = 2.16


def synthetic_trace(
    n_jobs: int,
    seed: int,
    *,
    arrival_rate: float = PHILLY_ARRIVAL_RATE,
    gpu_counts: Sequence[tuple[int, float]] = PHILLY_GPU_COUNTS,
    log_duration_mean: float = PHILLY_LOG_DURATION_MEAN,
    log_duration_sigma: float = PHILLY_LOG_DURATION_SIGMA,
    vcs: Sequence[str] | None = None,
    id_prefix: str = "syn-",
) -> Trace:
    """A trace of ``n_jobs`` GPU jobs; the same arguments always give the same trace.

    ``arrival_rate`` is in jobs per second; the first job arrives after one inter-arrival time,
    not at 0. ``gpu_counts`` pairs a GPU count with its relative weight (weights need not sum
    to 1). Durations are ``exp(N(log_duration_mean, log_duration_sigma))`` seconds. With ``vcs``,
    each job is assigned one of them uniformly; without, ``vc`` is null. Job ids are
    ``id_prefix`` followed by the job's index in submit order.
    """
    if n_jobs < 0:
        raise ValueError(f"n_jobs must be >= 0, got {n_jobs}")
    if not (math.isfinite(arrival_rate) and arrival_rate > 0):
        raise ValueError(f"arrival_rate must be finite and positive, got {arrival_rate}")
    if not (math.isfinite(log_duration_sigma) and log_duration_sigma >= 0):
        raise ValueError(f"log_duration_sigma must be finite and >= 0, got {log_duration_sigma}")
    sizes = np.array([size for size, _ in gpu_counts], dtype=np.int32)
    weights = np.array([weight for _, weight in gpu_counts], dtype=np.float64)
    if len(sizes) == 0 or np.any(sizes < 1) or np.any(weights < 0) or weights.sum() <= 0:
        raise ValueError("gpu_counts needs sizes >= 1 with non-negative weights, not all 0")
    if vcs is not None and (isinstance(vcs, str) or len(vcs) == 0):
        raise ValueError("vcs must be a non-empty sequence of VC names")

    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.exponential(1.0 / arrival_rate, size=n_jobs))
    num_gpus = sizes[rng.choice(len(sizes), size=n_jobs, p=weights / weights.sum())]
    duration = rng.lognormal(log_duration_mean, log_duration_sigma, size=n_jobs)
    ids = pc.binary_join_element_wise(
        id_prefix, pc.cast(pa.array(np.arange(n_jobs, dtype=np.int64)), pa.string()), ""
    )
    columns: dict[str, pa.Array | np.ndarray] = {
        "job_id": ids,
        "submit_time": submit,
        "num_gpus": num_gpus,
        "duration": duration,
    }
    if vcs is not None:
        columns["vc"] = pa.array(list(vcs), type=pa.string()).take(
            pa.array(rng.integers(0, len(vcs), size=n_jobs))
        )
    source = f"synthetic(n_jobs={n_jobs}, seed={seed})"
    return Trace.from_columns(dict(columns), source)
