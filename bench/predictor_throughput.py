"""Duration-estimator throughput on a large synthetic Helios-like history.

History estimator: bind to ``--jobs`` + ``--queries`` synthetic jobs
(:func:`dlsched.perf.duration.named_jobs.named_trace`: ``--users`` users, recurring name templates
with numeric variants, 15% novel variants), ``observe`` the first ``--jobs`` of them (the
history), then ``estimate`` the next ``--queries``: queries/s against a full history, with the
share answered by each source and the share of query names never seen before.

LightGBM estimator: bind to the same trace with a training window of the first
``--lgbm-train-jobs`` jobs (features rebuilt by replay, then 200 boosting rounds on one thread):
the bind time is the training time. Then the same history is observed and the same queries
answered: queries/s.

Recall of the bounded similar-name search: for ``--recall-sample`` query names never seen
before, its best match against :func:`difflib.get_close_matches` over every known name (a full
scan, seconds per query): how often the best name is the same, how often it has the same digit
template (same name up to numbers), and the mean and largest ratio given up.

Prints one JSON object.

    python bench/predictor_throughput.py [--jobs 1000000] [--queries 100000] [--users 2000]
        [--lgbm-train-jobs 300000] [--recall-sample 20]
"""

from __future__ import annotations

import argparse
import difflib
import gc
import json
import resource
import time
from collections import Counter
from typing import Any

from dlsched.perf.duration.history import HistoryEstimator
from dlsched.perf.duration.learned import LgbmEstimator
from dlsched.perf.duration.named_jobs import named_trace
from dlsched.perf.duration.similarity import SimilarNames, digit_template, similarity
from dlsched.trace.schema import Trace


def recall(index: SimilarNames, queries: list[str], sample: int) -> dict[str, Any]:
    """The bounded search's best match against a full get_close_matches scan."""
    known = list(index)
    novel = [q for q in dict.fromkeys(queries) if q not in index][:sample]
    same = same_template = 0
    gaps: list[float] = []
    for query in novel:
        full = difflib.get_close_matches(query, known, 2, 0.6)
        mine = index.similar(query)
        if not full or not mine:
            same += full == list(mine)
            continue
        same += full[0] == mine[0]
        same_template += digit_template(full[0]) == digit_template(mine[0])
        gaps.append(similarity(query, full[0]) - similarity(query, mine[0]))
    n = max(len(novel), 1)
    return {
        "queries": len(novel),
        "same_best_name": round(same / n, 3),
        "same_best_template": round(same_template / n, 3),
        "mean_ratio_gap": round(sum(gaps) / len(gaps), 4) if gaps else None,
        "max_ratio_gap": round(max(gaps), 4) if gaps else None,
    }


def history_bench(trace: Trace, jobs: int, queries: int, sample: int) -> dict[str, Any]:
    est = HistoryEstimator()
    est.bind(trace)
    durations: list[float] = trace.column("duration").to_pylist()
    submit: list[float] = trace.column("submit_time").to_pylist()
    t0 = time.perf_counter()
    for row in range(jobs):
        est.observe(row, durations[row], submit[row])
    observe_s = time.perf_counter() - t0
    names: list[str] = trace.column("job_name").to_pylist()
    novel = sum(1 for row in range(jobs, jobs + queries) if names[row] not in est.names)
    sources: Counter[str] = Counter()
    t0 = time.perf_counter()
    for row in range(jobs, jobs + queries):
        est.estimate(row, submit[row])
        sources[est.last_source] += 1
    query_s = time.perf_counter() - t0
    return {
        "history_jobs": jobs,
        "distinct_names": len(est.names),
        "observe_per_s": round(jobs / observe_s),
        "queries": queries,
        "queries_per_s": round(queries / query_s),
        "novel_query_names": round(novel / queries, 4),
        "sources": {k: round(v / queries, 4) for k, v in sorted(sources.items())},
        "recall_vs_full_scan": recall(est.names, names[jobs : jobs + queries], sample),
    }


def lgbm_bench(trace: Trace, jobs: int, queries: int, train_jobs: int) -> dict[str, Any]:
    submit: list[float] = trace.column("submit_time").to_pylist()
    durations: list[float] = trace.column("duration").to_pylist()
    est = LgbmEstimator(train_until=submit[train_jobs])
    t0 = time.perf_counter()
    est.bind(trace)
    bind_s = time.perf_counter() - t0
    for row in range(jobs):
        est.observe(row, durations[row], submit[row])
    t0 = time.perf_counter()
    for row in range(jobs, jobs + queries):
        est.estimate(row, submit[row])
    query_s = time.perf_counter() - t0
    return {
        "train_jobs": est.train_jobs,
        "train_s": round(bind_s, 2),
        "queries": queries,
        "queries_per_s": round(queries / query_s),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--lgbm-train-jobs", type=int, default=300_000)
    parser.add_argument("--recall-sample", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    t0 = time.perf_counter()
    trace = named_trace(args.jobs + args.queries, n_users=args.users, seed=args.seed)
    generate_s = time.perf_counter() - t0
    history = history_bench(trace, args.jobs, args.queries, args.recall_sample)
    gc.collect()
    lgbm = lgbm_bench(trace, args.jobs, args.queries, args.lgbm_train_jobs)
    result = {
        "trace": trace.source,
        "generate_s": round(generate_s, 2),
        "history": history,
        "lgbm": lgbm,
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
