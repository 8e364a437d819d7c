"""Load on the live service: API submissions per second and scheduling-cycle time.

1. ``--submissions`` jobs (default 10,000) submitted one after another through the real API: a
   uvicorn server on 127.0.0.1 in this process (fake back end, the control loop running), an
   HTTP client with keep-alive. Prints submissions/s.
2. For each policy: a 1,000-node × 8-GPU cluster, about 10,000 jobs still pending after the
   first cycle has filled the cluster, the fake back end on a fake clock advancing ``--step-s``
   per cycle (jobs finish, others start). Two times per cycle: "plan" is the scheduling cycle
   proper (the Scheduler with the policy and placer producing the Plan); "step" is the whole
   controller step: observe the back end, record exits (one transaction each), refresh the
   mirror from the store's event log, plan, and start/preempt (one transaction and one
   back-end call each). Prints the first two steps (which fill the empty cluster and take in
   the records of those starts) apart, and p50/p99 (ms) of the next cycles.

Both parts run once per SQLite ``synchronous`` setting of ``--sync`` (default ``normal,full``: an
A/B of durable acknowledgements in one run; the service itself always runs ``FULL``, see
:mod:`dlsched.service.store.dialect`).

Run: ``python bench/service_load.py`` (add ``--quick`` for a smaller smoke run).
"""

from __future__ import annotations

import argparse
import gc
import random
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import uvicorn

from dlsched.backends.fake import FakeBackend
from dlsched.cluster.parse import resolve_cluster
from dlsched.policy.registry import create_policy
from dlsched.service.control.controller import Controller
from dlsched.service.http_limits import HttpLimits, server_config
from dlsched.service.server import Service, ServiceConfig, bind
from dlsched.service.store.database import Store
from dlsched.service.store.dialect import SqliteDialect
from dlsched.service.store.records import PENDING, NewJob


def bench_submissions(n: int, tmp: Path) -> float:
    config = ServiceConfig(
        cluster="125x8", policy="fifo", backend="fake", db=tmp / "load.db", round_s=1.0
    )
    service = Service(config)
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    server = uvicorn.Server(server_config(service.app, HttpLimits().fitted()))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    service.start()
    thread.start()
    try:
        while not server.started:
            time.sleep(0.05)
        headers = {"Authorization": f"Bearer {service.token}"}
        rng = random.Random(0)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers) as client:
            began = time.perf_counter()
            for i in range(n):
                body = {
                    "name": f"load{i}",
                    "user": f"user{i % 17}",
                    "gpus": rng.choice([1, 2, 4, 8]),
                    "command": ["sleep", str(rng.randint(60, 3600))],
                }
                r = client.post("/jobs", json=body)
                if r.status_code != 201:
                    raise RuntimeError(f"submission {i}: HTTP {r.status_code}: {r.text}")
            elapsed = time.perf_counter() - began
        stored = len(service.store.jobs())
        if stored != n:
            raise RuntimeError(f"{stored} jobs stored, {n} submitted")
    finally:
        server.should_exit = True
        thread.join(30)
        service.stop()
        sock.close()
    return n / elapsed


def bench_cycles(
    policy: str, pending: int, nodes: int, cycles: int, step_s: float, tmp: Path
) -> dict[str, float]:
    clock = [0.0]
    store = Store(tmp / f"cycle-{policy}.db")
    backend = FakeBackend(lambda: clock[0])
    cluster = resolve_cluster(f"{nodes}x8")
    ctl = Controller(store, backend, cluster, create_policy(policy), clock=lambda: clock[0])
    rng = random.Random(1)
    gpus = [1, 1, 2, 4, 8]
    fill = nodes * 8 // 3 + 1000  # more than the first cycle can start, so `pending` remain
    for i in range(pending + fill):
        d = rng.uniform(60, 3600)
        store.submit(
            NewJob(f"b{i}", f"u{i % 50}", rng.choice(gpus), ("sleep", f"{d:.0f}"), None, d), 0.0
        )
    # The first step starts thousands of jobs on the empty cluster; the second takes in their
    # records. Both are timed apart from the steady state.
    t0 = time.perf_counter()
    ctl.step()
    ctl.step()
    gc.freeze()  # as the service's control loop does after its first step
    first_ms = (time.perf_counter() - t0) * 1000
    still = len(store.jobs(PENDING))
    steps, plans, events = [], [], 0
    before = store.last_event()
    for _ in range(cycles):
        clock[0] += step_s
        t0 = time.perf_counter()
        ctl.step()
        steps.append((time.perf_counter() - t0) * 1000)
        plans.append(ctl.last_plan_ms)
    events = store.last_event() - before
    store.close()
    s, p = np.array(steps), np.array(plans)
    return {
        "first_ms": first_ms,
        "pending_after_first": float(still),
        "plan_p50": float(np.percentile(p, 50)),
        "plan_p99": float(np.percentile(p, 99)),
        "step_p50": float(np.percentile(s, 50)),
        "step_p99": float(np.percentile(s, 99)),
        "changes_per_cycle": events / cycles,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--submissions", type=int, default=10_000)
    ap.add_argument("--pending", type=int, default=10_000)
    ap.add_argument("--nodes", type=int, default=1_000)
    ap.add_argument("--cycles", type=int, default=100)
    ap.add_argument("--step-s", type=float, default=10.0, help="fake seconds between cycles")
    ap.add_argument("--policies", default="fifo,sjf,tiresias")
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    ap.add_argument("--sync", default="normal,full", help="SQLite synchronous settings to A/B")
    a = ap.parse_args()
    if a.quick:
        a.submissions, a.pending, a.nodes, a.cycles = 300, 500, 50, 10
    for sync in a.sync.split(","):
        SqliteDialect.synchronous = sync.strip().upper()
        print(f"## SQLite synchronous={SqliteDialect.synchronous}")
        run_all(a)


def run_all(a: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if a.submissions > 0:
            rate = bench_submissions(a.submissions, tmp)
            print(f"API submissions: {a.submissions} in a bounded loop: {rate:,.0f}/s")
        print(
            f"cycles: {a.nodes} nodes x 8 GPUs, {a.cycles} cycles after the first, "
            f"{a.step_s:g} s apart"
        )
        print(
            "| policy | pending | first two steps (ms) | plan p50 | plan p99 | step p50 | step p99 "
            "| job changes per cycle |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for policy in a.policies.split(","):
            r = bench_cycles(policy, a.pending, a.nodes, a.cycles, a.step_s, tmp)
            print(
                f"| {policy} | {r['pending_after_first']:,.0f} | {r['first_ms']:,.0f} | "
                f"{r['plan_p50']:.1f} | {r['plan_p99']:.1f} | {r['step_p50']:.1f} | "
                f"{r['step_p99']:.1f} | {r['changes_per_cycle']:.1f} |"
            )


if __name__ == "__main__":
    main()
