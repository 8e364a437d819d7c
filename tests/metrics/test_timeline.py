"""The timeline's size follows the recorded changes, never the span of time."""

from __future__ import annotations

import numpy as np

from dlsched.metrics.timeline import DENSE_FLOOR, FORM_KEY, TimelineRecorder


def recorder() -> TimelineRecorder:
    rec = TimelineRecorder(("a", "b"), [8, 4], 60.0)
    rec.record(0, 0.0, 2.0, 8, 1, 0, 0)
    rec.record(1, 30.0, 1.0, 4, 1, 1, 2)
    return rec


def test_a_short_run_keeps_every_grid_step() -> None:
    rec = recorder()
    rec.record(0, 600.0, 0.0, 8, 0, 0, 0)
    table = rec.to_table(0.0, 600.0)
    assert table.schema.metadata[FORM_KEY] == b"grid"
    times = table.filter(np.array(table.column("partition").to_pylist()) == "a")["time_s"]
    assert times.to_pylist() == [60.0 * k for k in range(11)]
    busy = table.filter(np.array(table.column("partition").to_pylist()) == "a")["busy_gpus"]
    assert busy.to_pylist() == [2.0] * 10 + [0.0]


def test_a_huge_span_keeps_only_the_changes() -> None:
    rec = recorder()
    rec.record(0, 1e9, 0.0, 8, 0, 0, 0)
    table = rec.to_table(0.0, 1e9 + 100)
    assert table.schema.metadata[FORM_KEY] == b"changes"
    assert table.num_rows < 10
    rows = [r for r in table.to_pylist() if r["partition"] == "a"]
    # Each row holds until the next: busy 2 from the start, 0 from the change at 1e9 s on.
    assert [(r["time_s"], r["busy_gpus"]) for r in rows] == [
        (0.0, 2.0),
        (60.0 * np.ceil(1e9 / 60.0), 0.0),
        (60.0 * np.ceil((1e9 + 100) / 60.0), 0.0),
    ]
    b = [r for r in table.to_pylist() if r["partition"] == "b"]
    assert [(r["time_s"], r["busy_gpus"]) for r in b][:2] == [(0.0, 0.0), (60.0, 1.0)]


def test_the_grid_stays_until_it_outgrows_the_changes() -> None:
    rec = recorder()
    steps = DENSE_FLOOR // 2 - 1  # two pools: just within the floor
    table = rec.to_table(0.0, 60.0 * (steps - 1))
    assert table.schema.metadata[FORM_KEY] == b"grid" and table.num_rows == 2 * steps
    assert rec.to_table(0.0, 60.0 * steps * 2).schema.metadata[FORM_KEY] == b"changes"
