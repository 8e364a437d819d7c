"""Golden tests: dlsched's simulator against an independent reference, and hand-worked scenarios.

The reference below replays a trace under FIFO or SJF with consolidated placement using nothing
but plain lists, following the Helios evaluation semantics (docs ``seeds.md`` section 1.2):

- consolidate: a job of at most one node's GPUs goes to the node with the fewest free GPUs that
  fits it (lowest node index among equals); a larger job takes wholly free nodes (lowest index
  first) for each full node of GPUs, then one best-fit node (not already chosen) for the rest;
- FIFO / SJF are non-preemptive with strict head-of-line blocking;
- at one instant: finishes, then arrivals, then one scheduling cycle.

It shares no code with ``dlsched.scheduler``, ``dlsched.placement`` or ``dlsched.cluster.state``.
"""

from __future__ import annotations

import bisect
import heapq
import math
import random
from collections import Counter, defaultdict
from dataclasses import dataclass

import pytest

from dlsched.cluster.parse import resolve_cluster
from dlsched.cluster.spec import ClusterSpec, NodeSpec
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import RunResult, Segment, simulate
from dlsched.trace.bundled import bundled_trace_path
from dlsched.trace.read import read_trace
from dlsched.trace.schema import Trace
from tests.sim.conftest import assert_no_overcommit

# ---- the independent reference --------------------------------------------------------------

NodeShare = tuple[int, int]  # (node index, GPUs taken there)


def ref_consolidate(free: list[int], gpus: int, per_node: int) -> list[NodeShare] | None:
    """Where a job of ``gpus`` whole GPUs goes on nodes with ``free`` GPUs, or None."""

    def best_fit(need: int, exclude: set[int]) -> int | None:
        best: int | None = None
        for i, f in enumerate(free):
            if i in exclude or f < need:
                continue
            if best is None or f < free[best]:
                best = i
        return best

    if gpus <= per_node:
        node = best_fit(gpus, set())
        return None if node is None else [(node, gpus)]
    whole, rest = divmod(gpus, per_node)
    empty = [i for i, f in enumerate(free) if f == per_node]
    if len(empty) < whole:
        return None
    chosen = empty[:whole]
    out = [(i, per_node) for i in chosen]
    if rest:
        node = best_fit(rest, set(chosen))
        if node is None:
            return None
        out.append((node, rest))
    return out


@dataclass
class RefRun:
    start: list[float]
    end: list[float]
    shares: list[list[NodeShare]]


def ref_simulate(
    submit: list[float],
    gpus: list[int],
    duration: list[float],
    policy: str,
    nodes: int,
    per_node: int,
) -> RefRun:
    """Replay jobs (already in submit order) non-preemptively with strict head-of-line blocking."""
    n = len(submit)
    free = [per_node] * nodes
    start = [math.nan] * n
    end = [math.nan] * n
    shares: list[list[NodeShare]] = [[] for _ in range(n)]
    finishes: list[tuple[float, int]] = []  # heap of (end time, job)
    queue: list[tuple[float, ...]] = []  # sorted priority keys, job index last
    nxt = 0
    while nxt < n or finishes:
        t = min(submit[nxt] if nxt < n else math.inf, finishes[0][0] if finishes else math.inf)
        while finishes and finishes[0][0] == t:
            _, j = heapq.heappop(finishes)
            for node, k in shares[j]:
                free[node] += k
        while nxt < n and submit[nxt] == t:
            if policy == "fifo":
                key: tuple[float, ...] = (submit[nxt], nxt)
            else:
                key = (duration[nxt], submit[nxt], nxt)
            bisect.insort(queue, key)
            nxt += 1
        while queue:
            j = int(queue[0][-1])
            placed = ref_consolidate(free, gpus[j], per_node)
            if placed is None:
                break  # head-of-line blocking: nobody behind the head may start
            queue.pop(0)
            for node, k in placed:
                free[node] -= k
            shares[j] = placed
            start[j] = t
            end[j] = t + duration[j]
            heapq.heappush(finishes, (end[j], j))
    return RefRun(start, end, shares)


def node_shares(segments: list[Segment]) -> dict[int, list[NodeShare]]:
    """GPUs per node of each job's (single) run, from the simulator's segments."""
    per_job: dict[int, Counter[int]] = defaultdict(Counter)
    for s in segments:
        per_job[s.row][s.node] += 1
    return {row: sorted(c.items()) for row, c in per_job.items()}


def compare_with_reference(
    trace: Trace, cluster: ClusterSpec, policy: str, nodes: int, per_node: int
) -> tuple[RunResult, RefRun]:
    submit = trace.column("submit_time").to_pylist()
    gpus = trace.column("num_gpus").to_pylist()
    duration = trace.column("duration").to_pylist()
    ref = ref_simulate(submit, gpus, duration, policy, nodes, per_node)
    result = simulate(trace, cluster, SimConfig(policy=policy), record_segments=True)
    jobs = result.jobs.to_pydict()
    assert jobs["status"] == ["finished"] * len(trace)
    mismatches = [
        (jobs["job_id"][i], jobs["first_start_s"][i], ref.start[i], jobs["end_s"][i], ref.end[i])
        for i in range(len(trace))
        if jobs["first_start_s"][i] != ref.start[i] or jobs["end_s"][i] != ref.end[i]
    ]
    assert not mismatches, f"{len(mismatches)} jobs differ, first: {mismatches[:5]}"
    assert result.segments is not None
    assert_no_overcommit(result.segments)
    got_shares = node_shares(result.segments)
    for i in range(len(trace)):
        assert got_shares[i] == sorted(ref.shares[i]), f"job {jobs['job_id'][i]} placement"
    return result, ref


# ---- golden: the bundled Philly VC 0e4a51 slice on 32 x 8 GPUs --------------------------------

# Headline numbers of the bundled VC 0e4a51 slice (990 jobs) on 32 nodes x 8 GPUs. Obtained by
# replaying the trace with dlsched (SimConfig(policy=...), consolidate placement) and reading
# avg_jct_s / avg_queue_s / makespan_s from the summary; the test recomputes them from the
# independent reference (mean of end - submit and start - submit over all jobs; last end minus
# first submit), which agrees with dlsched on every job's start and end. A change here means the
# simulation semantics changed: re-derive the reference first, then update these constants.
GOLDEN = {
    "fifo": {"avg_jct_s": 261185.7292929293, "avg_queue_s": 19464.69090909091},
    "sjf": {"avg_jct_s": 252546.1585858586, "avg_queue_s": 10825.120202020202},
}
GOLDEN_MAKESPAN_S = 6_715_200.0  # both policies: the last job is long and arrives late


@pytest.fixture(scope="module")
def vc_trace() -> Trace:
    return read_trace(bundled_trace_path("vc_0e4a51")).trace


@pytest.mark.parametrize("policy", ["fifo", "sjf"])
def test_vc_0e4a51_matches_independent_reference(vc_trace: Trace, policy: str) -> None:
    assert len(vc_trace) == 990
    result, ref = compare_with_reference(vc_trace, resolve_cluster("32x8"), policy, 32, 8)
    submit = vc_trace.column("submit_time").to_pylist()
    n = len(submit)
    ref_jct = sum(e - s for e, s in zip(ref.end, submit, strict=True)) / n
    ref_queue = sum(b - s for b, s in zip(ref.start, submit, strict=True)) / n
    ref_makespan = max(ref.end) - min(submit)
    golden = GOLDEN[policy]
    assert ref_jct == pytest.approx(golden["avg_jct_s"], rel=1e-12)
    assert ref_queue == pytest.approx(golden["avg_queue_s"], rel=1e-12)
    assert ref_makespan == GOLDEN_MAKESPAN_S
    summary = result.summary
    assert summary["jobs"] == 990 and summary["jobs_set_aside"] == 0
    assert summary["avg_jct_s"] == pytest.approx(golden["avg_jct_s"], rel=1e-12)
    assert summary["avg_queue_s"] == pytest.approx(golden["avg_queue_s"], rel=1e-12)
    assert summary["makespan_s"] == GOLDEN_MAKESPAN_S
    assert summary["preemptions"] == 0 and summary["restarts"] == 0


@pytest.mark.parametrize("policy", ["fifo", "sjf"])
@pytest.mark.parametrize("seed", [1, 2])
def test_multi_node_jobs_match_independent_reference(policy: str, seed: int) -> None:
    """The bundled slice has no job above 8 GPUs; this synthetic load exercises the whole-nodes
    plus best-fit-remainder rule (12, 16, 20, 24 GPUs) on 8 nodes x 8 GPUs, with simultaneous
    arrivals and equal durations so tie-breaks matter."""
    rng = random.Random(seed)
    n = 400
    cols: dict[str, list[object]] = {
        "job_id": [f"s{i}" for i in range(n)],
        "submit_time": sorted(float(rng.randrange(0, 40_000, 20)) for _ in range(n)),
        "num_gpus": [rng.choice([1, 1, 2, 3, 4, 5, 8, 12, 16, 20, 24]) for _ in range(n)],
        "duration": [float(rng.choice([0, 60, 300, 600, 1800, 3600, 7200])) for _ in range(n)],
    }
    trace = Trace.from_columns(cols, "synthetic")
    cluster = resolve_cluster("8x8")
    result, _ = compare_with_reference(trace, cluster, policy, 8, 8)
    assert result.summary["jobs"] == n


# ---- hand-checkable scenarios: 2 nodes ---------------------------------------------------------


def two_nodes(gpus_per_node: int) -> ClusterSpec:
    return ClusterSpec("pair", (NodeSpec("n0", gpus_per_node), NodeSpec("n1", gpus_per_node)))


def small_trace(jobs: list[tuple[str, float, int, float]]) -> Trace:
    """Jobs as (id, submit, GPUs, duration)."""
    return Trace.from_columns(
        {
            "job_id": [j[0] for j in jobs],
            "submit_time": [j[1] for j in jobs],
            "num_gpus": [j[2] for j in jobs],
            "duration": [j[3] for j in jobs],
        },
        "hand",
    )


def run_small(
    jobs: list[tuple[str, float, int, float]],
    gpus_per_node: int,
    policy: str,
    options: dict[str, str] | None = None,
) -> dict[str, dict[str, object]]:
    result = simulate(
        small_trace(jobs),
        two_nodes(gpus_per_node),
        SimConfig(policy=policy, policy_options=options or {}),
        record_segments=True,
    )
    assert result.segments is not None
    assert_no_overcommit(result.segments)
    rows = result.jobs.to_pylist()
    nodes: dict[int, set[int]] = defaultdict(set)
    for s in result.segments:
        nodes[s.row].add(s.node)
    out = {}
    for i, r in enumerate(rows):
        r["nodes"] = sorted(nodes[i])
        out[r["job_id"]] = r
    return out


def times(rows: dict[str, dict[str, object]]) -> dict[str, tuple[object, object]]:
    return {k: (r["first_start_s"], r["end_s"]) for k, r in rows.items()}


# Jobs for the head-of-line scenario on 2 nodes x 4 GPUs, as (id, submit, GPUs, duration).
HOL_JOBS = [
    ("J0", 0.0, 3, 100.0),
    ("J1", 10.0, 4, 50.0),
    ("J2", 20.0, 4, 30.0),
    ("J3", 30.0, 1, 20.0),
]


def test_fifo_head_of_line_blocking_by_hand() -> None:
    # t=0:  J0 (3 GPUs): both nodes have 4 free, tie -> lowest index n0; n0 has 1 free left.
    # t=10: J1 (4): only n1 has 4 free -> n1, runs [10, 60).
    # t=20: J2 (4): no node has 4 free -> waits at the head of the queue.
    # t=30: J3 (1): n0 has 1 free, but J2 is ahead and does not fit: strict head-of-line
    #       blocking keeps J3 waiting.
    # t=60: J1 ends, n1 has 4 free. J2 -> n1, [60, 90). J3: best fit is n0 (1 free) -> [60, 80).
    # t=100: J0 ends.
    rows = run_small(HOL_JOBS, 4, "fifo")
    assert times(rows) == {
        "J0": (0.0, 100.0),
        "J1": (10.0, 60.0),
        "J2": (60.0, 90.0),
        "J3": (60.0, 80.0),
    }
    assert [rows[j]["nodes"] for j in ("J0", "J1", "J2", "J3")] == [[0], [1], [1], [0]]
    assert rows["J3"]["queue_s"] == 30.0


def test_fifo_backfill_lets_a_small_job_pass_the_blocked_head() -> None:
    # Same jobs with backfill: at t=30 J2 still does not fit, but J3 (1 GPU) fits on n0 (the
    # only node with a free GPU) and starts at once, [30, 50). J2 still starts at 60 on n1.
    rows = run_small(HOL_JOBS, 4, "fifo", {"allow_backfill": "true"})
    assert times(rows) == {
        "J0": (0.0, 100.0),
        "J1": (10.0, 60.0),
        "J2": (60.0, 90.0),
        "J3": (30.0, 50.0),
    }
    assert rows["J3"]["nodes"] == [0]


# Jobs for the FIFO-versus-SJF scenario on 2 nodes x 4 GPUs.
ORDER_JOBS = [
    ("A", 0.0, 8, 100.0),
    ("B", 10.0, 4, 300.0),
    ("C", 20.0, 4, 50.0),
    ("D", 30.0, 2, 200.0),
    ("E", 40.0, 2, 10.0),
]


def test_fifo_order_by_hand() -> None:
    # t=0: A takes both nodes (8 = two whole nodes), [0, 100). B, C, D, E queue behind it.
    # t=100: A ends. FIFO order B, C, D, E. B (4): both nodes empty, tie -> n0, [100, 400).
    #        C (4) -> n1, [100, 150). D (2): no free GPU -> head-of-line; E waits behind it.
    # t=150: C ends, n1 has 4 free. D (2) -> n1, [150, 350). E (2): n1 has 2 left -> [150, 160).
    rows = run_small(ORDER_JOBS, 4, "fifo")
    assert times(rows) == {
        "A": (0.0, 100.0),
        "B": (100.0, 400.0),
        "C": (100.0, 150.0),
        "D": (150.0, 350.0),
        "E": (150.0, 160.0),
    }
    assert rows["A"]["nodes"] == [0, 1]
    assert rows["B"]["nodes"] == [0] and rows["D"]["nodes"] == [1]


def test_sjf_order_by_hand() -> None:
    # t=0: A alone, both nodes, [0, 100).
    # t=100: A ends. SJF order by duration: E (10), C (50), D (200), B (300).
    #        E (2): both nodes have 4 free, tie -> n0, [100, 110). C (4): only n1 -> [100, 150).
    #        D (2): n0 has 2 free -> [100, 300). B (4): no node has 4 -> waits.
    # t=110: E ends, n0 has 2 free; B still does not fit.
    # t=150: C ends, n1 has 4 free -> B [150, 450).
    rows = run_small(ORDER_JOBS, 4, "sjf")
    assert times(rows) == {
        "A": (0.0, 100.0),
        "B": (150.0, 450.0),
        "C": (100.0, 150.0),
        "D": (100.0, 300.0),
        "E": (100.0, 110.0),
    }
    assert rows["E"]["nodes"] == [0] and rows["C"]["nodes"] == [1]
    assert rows["D"]["nodes"] == [0] and rows["B"]["nodes"] == [1]


def test_sjf_head_of_line_blocking_versus_backfill() -> None:
    # 2 nodes x 4 GPUs. X (4 GPUs, 100 s) runs on n0 from t=0; Y (3 GPUs, 1000 s) on n1 from
    # t=0 (n0 is full) leaving 1 free GPU there. At t=10 come L (4 GPUs, 40 s) and S (1 GPU,
    # 60 s). SJF order: L (40) before S (60). L does not fit (no node with 4 free).
    # Blocking: S waits behind L until X ends at 100; then L -> n0 [100, 140) and S -> n1's
    # free GPU [100, 160).
    # Backfill: S skips L and starts at 10 on n1, [10, 70); L still starts at 100.
    jobs = [
        ("X", 0.0, 4, 100.0),
        ("Y", 0.0, 3, 1000.0),
        ("L", 10.0, 4, 40.0),
        ("S", 10.0, 1, 60.0),
    ]
    blocking = run_small(jobs, 4, "sjf")
    assert times(blocking) == {
        "X": (0.0, 100.0),
        "Y": (0.0, 1000.0),
        "L": (100.0, 140.0),
        "S": (100.0, 160.0),
    }
    backfill = run_small(jobs, 4, "sjf", {"allow_backfill": "true"})
    assert backfill["S"]["first_start_s"] == 10.0 and backfill["S"]["end_s"] == 70.0
    assert backfill["L"]["first_start_s"] == 100.0 and backfill["L"]["end_s"] == 140.0
    assert backfill["S"]["nodes"] == [1]


def test_srtf_preemption_and_restore_stall_by_hand() -> None:
    # 2 nodes x 4 GPUs; SRTF is preemptive and re-ranks all active jobs at every event.
    # t=0:   A (8 GPUs, 1000 s) takes both nodes.
    # t=100: B (4 GPUs, 200 s) arrives. Remaining: B 200 < A 900. B is admitted (8 -> 4 GPUs
    #        of capacity left), A needs 8 > 4 and is preempted with 100 s done. B -> n0 (both
    #        nodes free after A leaves; lowest index), [100, 300).
    # t=150: C (1 GPU, 50 s): ranking C (50), B (150), A (900, waiting). C and B admitted
    #        (1 + 4 <= 8), A still needs 8 > 3. C -> n1, [150, 200).
    # t=200: C ends. B (100) runs on; A (900) needs 8 > 4: waits.
    # t=300: B ends. A resumes on both nodes. Its restore stall for 8 GPUs (<= 8) is 30 s: it
    #        holds the GPUs from 300 but progresses from 330, so it ends at 330 + 900 = 1230.
    #        GPU-seconds held: 8 * (100 + 930) = 8240.
    jobs = [("A", 0.0, 8, 1000.0), ("B", 100.0, 4, 200.0), ("C", 150.0, 1, 50.0)]
    rows = run_small(jobs, 4, "srtf")
    assert times(rows) == {"A": (0.0, 1230.0), "B": (100.0, 300.0), "C": (150.0, 200.0)}
    assert [rows[j]["preemptions"] for j in "ABC"] == [1, 0, 0]
    assert rows["A"]["gpu_seconds"] == 8 * (100 + 930)
    assert rows["B"]["nodes"] == [0] and rows["C"]["nodes"] == [1]
    assert rows["A"]["jct_s"] == 1230.0


def test_tiresias_demotion_preemption_and_round_alignment_by_hand() -> None:
    # 2 nodes x 1 GPU; thresholds 100 GPU-s (queue 0 below, queue 1 from 100), 10-s rounds.
    # Decisions happen only at multiples of 10 s; inside a queue, running jobs first, then
    # submit order.
    # t=0:   A and B (1 GPU, 300 s each) start, A -> n0, B -> n1 (tie -> lowest index first).
    # t=5:   C (1 GPU, 50 s) arrives; the next round is t=10: A, B, C all in queue 0, submit
    #        order A, B, C, only 2 GPUs: C waits.
    # t=100: A and B reach 100 GPU-s -> queue 1. C (queue 0) ranks first, then A (submitted
    #        first among equals, by sequence). B is preempted after 100 s of progress; C takes
    #        its GPU on n1, [100, 150).
    # t=150: C ends (150 is a round boundary). B resumes on n1 with a 7-s restore stall (1 GPU):
    #        progress from 157, 200 s left -> ends at 357. GPU-seconds held: 100 + 207 = 307.
    # t=300: A ends (never preempted).
    # t=303: D (1 GPU, 20 s) arrives while n0 is free, but waits for the round at t=310:
    #        D (queue 0) and B (queue 1) both fit; D -> n0, [310, 330).
    jobs = [
        ("A", 0.0, 1, 300.0),
        ("B", 0.0, 1, 300.0),
        ("C", 5.0, 1, 50.0),
        ("D", 303.0, 1, 20.0),
    ]
    rows = run_small(jobs, 1, "tiresias", {"thresholds": "100", "round_s": "10"})
    assert times(rows) == {
        "A": (0.0, 300.0),
        "B": (0.0, 357.0),
        "C": (100.0, 150.0),
        "D": (310.0, 330.0),
    }
    assert [rows[j]["preemptions"] for j in "ABCD"] == [0, 1, 0, 0]
    assert rows["B"]["gpu_seconds"] == 307.0
    assert rows["D"]["queue_s"] == 7.0
    assert rows["A"]["nodes"] == [0] and rows["B"]["nodes"] == [1] and rows["C"]["nodes"] == [1]
