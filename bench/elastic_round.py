"""Wall time of one scheduling round of the elastic policies pollux, gavel and ones.

Clusters of 64, 512 and 4,096 GPUs (half T4 nodes, half RTX 2080 Ti nodes, 4 GPUs each) with
one active job per 2 GPUs (applications drawn over the six profiled ones except imagenet,
seeded). Each job is part-way through training: its epoch, progress, observed metrics and
examples come from the bundled validation curves; half run at their requested GPUs (placed
node by node) with a measured throughput. ONES's progress predictor is first trained on one
finished job per application. Each policy decides ``--rounds`` consecutive rounds on the same
jobs (its state carries over); the first (cold: model caches empty) and the mean of the
others (warm) are printed, one JSON line per (policy, GPUs), then a Markdown table.

    python bench/elastic_round.py [--sizes 64,512,4096] [--policies pollux,gavel,ones]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from dataclasses import replace
from types import MappingProxyType

from dlsched.cluster.parse import resolve_cluster
from dlsched.elastic.policy import place_consolidated
from dlsched.elastic.registry import create_elastic_policy
from dlsched.elastic.types import Allocation, ClusterView, FinishedInfo, JobInfo, cluster_view
from dlsched.perf.perfbook import PerfBook
from dlsched.perf.profiles import load_profile

APPS = ("bert", "cifar10", "deepspeech2", "ncf", "yolov3")
BASE_BATCH = {"bert": 12, "cifar10": 128, "deepspeech2": 20, "ncf": 256, "yolov3": 8}


def make_job(
    i: int, app: str, epoch: int, gpus: int, perf: PerfBook, alloc: Allocation | None
) -> JobInfo:
    eff = perf.efficiency(app)
    curve = load_profile(app).validation[0]
    epoch = min(epoch, eff.num_epochs - 1)
    size = float(curve.iteration[0] * curve.global_bsz)
    throughputs = {}
    if alloc is not None:
        t = perf.iteration_time(app, "t4", alloc.placement, alloc.local_bsz, alloc.accum_steps)
        throughputs[alloc.num_gpus] = (alloc.global_bsz() / t,)
    return JobInfo(
        name=f"{app}-{i}",
        index=i,
        application=app,
        submit_time=0.0,
        requested_gpus=gpus,
        requested_bsz=BASE_BATCH[app] * gpus,
        attained_service=3600.0 * gpus * epoch / eff.num_epochs,
        progress=eff.required[epoch - 1] if epoch else 0.0,
        total_progress=eff.total_progress,
        epoch=epoch,
        num_epochs=eff.num_epochs,
        samples=size * epoch,
        allocation=alloc,
        restarts=0,
        last_change=0.0 if alloc else None,
        epoch_at_change=0,
        max_gpus_seen=gpus if alloc else 0,
        epoch_size=size,
        throughputs=MappingProxyType(throughputs),
        metrics=tuple(curve.metric[:epoch]),
        samples_at_epoch=tuple(size * (k + 1) for k in range(epoch)),
    )


def workload(cluster: ClusterView, perf: PerfBook, seed: int) -> list[JobInfo]:
    rng = random.Random(seed)
    free = [n.gpus for n in cluster.nodes]
    jobs = []
    for i in range(cluster.total_gpus // 2):
        app = rng.choice(APPS)
        gpus = rng.choice((1, 1, 2, 4))
        epoch = rng.randrange(1, perf.efficiency(app).num_epochs)
        alloc = None
        if i % 2 == 0:
            placed = place_consolidated(free, gpus)
            if placed is not None:
                config = perf.fixed_batch(app, gpus, BASE_BATCH[app] * gpus)
                alloc = Allocation(placed, config.local_bsz, config.accum_steps)
        jobs.append(make_job(i, app, epoch, gpus, perf, alloc))
    return jobs


def trained_history(perf: PerfBook) -> list[FinishedInfo]:
    done = []
    for k, app in enumerate(APPS):
        epochs = perf.efficiency(app).num_epochs
        done.append(FinishedInfo(make_job(-1 - k, app, epochs, 1, perf, None), 0.0))
    out = []
    for f in done:
        j = f.job
        curve = load_profile(j.application).validation[0]
        n = j.num_epochs
        metrics = tuple(curve.metric[:n])
        samples = tuple(j.epoch_size * (e + 1) for e in range(len(metrics)))
        out.append(FinishedInfo(replace(j, metrics=metrics, samples_at_epoch=samples), 0.0))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="64,512,4096")
    parser.add_argument("--policies", default="pollux,gavel,ones")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        nodes = size // 8
        cluster = cluster_view(resolve_cluster(f"t4:{nodes}x4,rtx:{nodes}x4"))
        for name in args.policies.split(","):
            perf = PerfBook()
            jobs = workload(cluster, perf, args.seed)
            policy = create_elastic_policy(name)
            policy.bind(cluster, perf, args.seed)
            if name == "ones":
                policy.finished(trained_history(perf))
            times = []
            for r in range(args.rounds):
                started = time.perf_counter()
                policy.decide(60.0 * (r + 1) * policy.interval_s / 60.0, jobs)
                times.append(time.perf_counter() - started)
            warm = statistics.mean(times[1:]) if len(times) > 1 else None
            record = {
                "policy": name,
                "gpus": size,
                "jobs": len(jobs),
                "cold_round_s": round(times[0], 3),
                "warm_round_s": None if warm is None else round(warm, 3),
            }
            rows.append(record)
            print(json.dumps(record), flush=True)
    print()
    print("| policy | GPUs | jobs | first round (s) | later rounds, mean (s) |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['policy']} | {row['gpus']:,} | {row['jobs']:,} | {row['cold_round_s']} | "
            f"{row['warm_round_s']} |"
        )


if __name__ == "__main__":
    main()
