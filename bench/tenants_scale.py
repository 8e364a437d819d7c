"""Admission at scale: 1,000,000 synthetic jobs over 1,000 ClusterQueues in one cohort tree
(an ``org`` cohort over 10 team cohorts of 100 queues each, 8 GPUs nominal per queue, reclaim
``Any``) on 1,000 × 8 GPUs, against plain FIFO on the same jobs without queues, in one process.
Prints both times and their ratio (the issue's bar: at most 2x).

    python bench/tenants_scale.py [--jobs 1000000] [--queues 1000] [--load 0.8] [--repeat 1]

With ``--repeat N`` it runs N pairs, alternating which of the two goes first, and prints the
median ratio and the range (walls on a shared machine vary by 10-20% from run to run). Before
each pair it prints the interpreter's speed at that moment (best of five ``sum(range(10**6))``,
as ``python -m timeit`` measures it), so that a reader can tell a slow machine from slow code.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import timeit
from pathlib import Path

import numpy as np
import yaml

from dlsched.cluster.parse import resolve_cluster
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import simulate
from dlsched.trace.schema import Trace

API = "kueue.x-k8s.io/v1beta1"
TEAMS = 10


def manifests(queues: int, gpus_each: int) -> list[dict[str, object]]:
    docs: list[dict[str, object]] = [
        {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "gpu"}},
        {"apiVersion": API, "kind": "Cohort", "metadata": {"name": "org"}, "spec": {}},
    ]
    for t in range(TEAMS):
        docs.append(
            {
                "apiVersion": API,
                "kind": "Cohort",
                "metadata": {"name": f"team{t}"},
                "spec": {"parentName": "org"},
            }
        )
    for q in range(queues):
        quota = {"name": "nvidia.com/gpu", "nominalQuota": gpus_each}
        docs.append(
            {
                "apiVersion": API,
                "kind": "ClusterQueue",
                "metadata": {"name": f"q{q}"},
                "spec": {
                    "cohort": f"team{q % TEAMS}",
                    "preemption": {"reclaimWithinCohort": "Any"},
                    "resourceGroups": [
                        {
                            "coveredResources": ["nvidia.com/gpu"],
                            "flavors": [{"name": "gpu", "resources": [quota]}],
                        }
                    ],
                },
            }
        )
        docs.append(
            {
                "apiVersion": API,
                "kind": "LocalQueue",
                "metadata": {"name": f"q{q}", "namespace": "bench"},
                "spec": {"clusterQueue": f"q{q}"},
            }
        )
    return docs


def trace(jobs: int, queues: int, gpus: int, load: float, seed: int = 0) -> Trace:
    """Poisson arrivals at ``load`` × the cluster's GPU capacity; 1-8 GPUs; log-normal run
    times (median 10 min); queues uniform at random."""
    rng = np.random.default_rng(seed)
    sizes = rng.choice([1, 2, 4, 8], size=jobs, p=[0.6, 0.2, 0.1, 0.1])
    duration = np.minimum(np.exp(rng.normal(np.log(600), 1.2, size=jobs)), 7 * 86400).round()
    work = float((sizes * duration).mean())
    rate = load * gpus / work
    submit = np.cumsum(rng.exponential(1 / rate, size=jobs)).round()
    vc = rng.integers(0, queues, size=jobs)
    return Trace.from_columns(
        {
            "job_id": [str(i) for i in range(jobs)],
            "submit_time": submit.tolist(),
            "num_gpus": sizes.tolist(),
            "duration": np.maximum(duration, 1).tolist(),
            "vc": [f"q{v}" for v in vc.tolist()],
        },
        "synthetic-tenants",
    )


def _probe_ms() -> float:
    """Milliseconds of ``sum(range(10**6))``, best of five runs of ten."""
    return min(timeit.repeat("sum(range(10**6))", number=10, repeat=5)) / 10 * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--queues", type=int, default=1000)
    ap.add_argument("--load", type=float, default=0.8)
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="pairs of runs, the order alternating (FIFO first, then queues first, ...)",
    )
    args = ap.parse_args()
    nodes = args.queues
    cluster = resolve_cluster(f"{nodes}x8")
    t = trace(args.jobs, args.queues, nodes * 8, args.load)
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "queues.yaml"
        path.write_text(yaml.safe_dump_all(manifests(args.queues, 8)))
        configs = [
            ("fifo", SimConfig(use_partitions=False)),
            ("fifo + queues", SimConfig(use_partitions=False, queues=str(path))),
        ]
        for pair in range(args.repeat):
            print(f"interpreter speed now: sum(range(10**6)) in {_probe_ms():.1f} ms")
            runs = {}
            for name, cfg in configs if pair % 2 == 0 else configs[::-1]:
                started = time.perf_counter()
                result = simulate(t, cluster, cfg)
                wall = time.perf_counter() - started
                s = result.summary
                runs[name] = wall
                del result
                print(
                    f"{name:14s} jobs {s['jobs']:>9,}  wall {wall:7.1f} s  avg JCT "
                    f"{s['avg_jct_s']:>9,.0f} s  avg queue {s['avg_queue_s']:>8,.0f} s  util "
                    f"{s['gpu_utilization']:.1%}  reclaims "
                    f"{(s['preemptions_by_cause'] or {}).get('reclaim', '-')}"
                )
            ratios.append(runs["fifo + queues"] / runs["fifo"])
            print(
                f"with queues / plain FIFO: {ratios[-1]:.2f}x "
                f"(the admission stage adds {ratios[-1] - 1:.2f}x FIFO's time)"
            )
    if len(ratios) > 1:
        print(
            f"over {len(ratios)} pairs: median {statistics.median(ratios):.2f}x, "
            f"range {min(ratios):.2f}-{max(ratios):.2f}x"
        )


if __name__ == "__main__":
    main()
