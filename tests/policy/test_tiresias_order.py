"""Tiresias's order inside a queue, simulated on a hand-worked scenario where the two rules part.

2 nodes x 1 GPU, one threshold at 1,000 GPU-s (every job here stays in queue 0), 10-s rounds:

- t=0:  P (1 GPU, 50 s) starts on n0.
- t=1:  X (2 GPUs, 100 s) arrives; at the round t=10 it needs 2 GPUs, 1 is free: it waits.
- t=12: Y (1 GPU, 100 s) arrives; at t=20 X still does not fit, Y does: Y starts on n1.
- t=50: P ends. Both GPUs would fit X if Y were stopped.
  - ``order=running`` (default, as the Tiresias authors' simulator): Y runs, so it ranks ahead of
    the waiting X; X needs 2 GPUs, 1 is left: X waits until Y ends at 120, then runs
    [120, 220). Nobody is preempted.
  - ``order=submit``: X was submitted first and ranks ahead of the running Y, which is
    preempted with 30 s done; X runs [50, 150); Y resumes at 150 after its 7-s restore stall
    (1 GPU) and ends at 157 + 70 = 227.
"""

from __future__ import annotations

from tests.sim.test_golden import run_small, times

JOBS = [("P", 0.0, 1, 50.0), ("X", 1.0, 2, 100.0), ("Y", 12.0, 1, 100.0)]
OPTIONS = {"thresholds": "1000", "round_s": "10"}


def test_a_waiting_job_never_displaces_a_running_job_of_its_own_queue_by_default() -> None:
    rows = run_small(JOBS, 1, "tiresias", OPTIONS)
    assert times(rows) == {"P": (0.0, 50.0), "X": (120.0, 220.0), "Y": (20.0, 120.0)}
    assert [rows[j]["preemptions"] for j in "PXY"] == [0, 0, 0]
    assert rows["X"]["queue_s"] == 119.0


def test_order_submit_lets_the_older_waiting_job_preempt_the_younger_running_one() -> None:
    rows = run_small(JOBS, 1, "tiresias", {**OPTIONS, "order": "submit"})
    assert times(rows) == {"P": (0.0, 50.0), "X": (50.0, 150.0), "Y": (20.0, 227.0)}
    assert [rows[j]["preemptions"] for j in "PXY"] == [0, 0, 1]
    assert rows["Y"]["gpu_seconds"] == 30.0 + 77.0
