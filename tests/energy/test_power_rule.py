"""The CES rule on hand-made sequences: each condition of seeds.md 1.4 on its own."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.energy.power_rule import RuleOutcome, RuleParams, apply_rule
from dlsched.energy.presets import PRESET_NAMES, PRESETS, get_preset

# Every shrink condition holds at step 4 of BUSY with flat forecasts of 3 nodes: demand fell
# from 10 to 5 (drop 5), the forecast is 2 below now, no rebound, the cut is 11 → 6 (5 nodes).
BUSY = [10, 10, 10, 10, 5, 5, 5, 5, 5, 5]
BASE = RuleParams(history=2, future=2, his_th=0.5, fut_th=0.5, de_th=1, buffer=1, hold_off=3)


def run(
    busy: list[int],
    params: RuleParams = BASE,
    forecast: float | list[float] = 3.0,
    total: int | list[int] = 20,
) -> RuleOutcome:
    n = len(busy)
    totals = np.full(n, total) if isinstance(total, int) else np.asarray(total)
    row = np.full(params.max_horizon, forecast, dtype=float)
    return apply_rule(np.asarray(busy), totals, np.tile(row, (n, 1)), params)


def shrinks(outcome: RuleOutcome) -> list[tuple[int, int, int]]:
    return [(e.step, e.before, e.after) for e in outcome.events if e.kind == "shrink"]


def test_starts_with_busy_plus_buffer_and_shrinks_when_every_condition_holds() -> None:
    out = run(BUSY)
    assert out.powered_on[0] == 11
    assert shrinks(out) == [(4, 11, 6)]
    assert list(out.powered_on) == [11, 11, 11, 11, 6, 6, 6, 6, 6, 6]
    assert out.shortfall_steps == 0


def test_start_is_capped_by_the_cluster() -> None:
    assert run([10, 10], total=10).powered_on[0] == 10


def test_history_condition() -> None:
    # The drop at step 4 is 5 nodes (mean of steps 2-3 minus now): 5 is enough, 5.5 is not.
    assert shrinks(run(BUSY, dataclasses.replace(BASE, his_th=5.0))) == [(4, 11, 6)]
    assert shrinks(run(BUSY, dataclasses.replace(BASE, his_th=5.5))) == []


def test_history_window_is_h_steps_before_now() -> None:
    # With H = 3 the mean of steps 1-3 is 10 too; with a dip at step 1 it is lower.
    dipped = [10, 4, 10, 10, 5, 5, 5, 5, 5, 5]
    h3 = dataclasses.replace(BASE, history=3, his_th=3.5)
    assert shrinks(run(BUSY, h3)) == [(4, 11, 6)]
    assert shrinks(run(dipped, h3)) == []  # (4 + 10 + 10) / 3 − 5 = 3 < 3.5
    assert shrinks(run(dipped, dataclasses.replace(BASE, his_th=3.5))) == [(4, 11, 6)]


def test_future_condition() -> None:
    # now − mean of the next F forecasts must reach fut_th (0.5): 5 − 4.5 does, 5 − 4.6 not.
    assert shrinks(run(BUSY, forecast=4.5)) == [(4, 11, 6)]
    assert shrinks(run(BUSY, forecast=4.6)) == []


def test_rebound_condition_reads_the_next_f_and_2f_forecasts() -> None:
    # Columns are steps i+1 … i+2F. Lower near, higher far: a rebound, no shrink.
    assert shrinks(run(BUSY, forecast=[3.0, 3.0, 4.0, 4.0])) == []
    assert shrinks(run(BUSY, forecast=[3.0, 3.0, 3.0, 3.0])) == [(4, 11, 6)]
    assert shrinks(run(BUSY, forecast=[3.0, 3.0, 2.0, 2.0])) == [(4, 11, 6)]
    # A rebound beyond 2F is not read (columns past 2F are ignored, even NaN).
    forecasts = np.tile([3.0, 3.0, 3.0, 3.0, np.nan, 99.0], (len(BUSY), 1))
    out = apply_rule(np.asarray(BUSY), np.full(len(BUSY), 20), forecasts, BASE)
    assert shrinks(out) == [(4, 11, 6)]


def test_smallest_cut() -> None:
    # The cut at step 4 is 11 − (5 + 1) = 5 nodes.
    assert shrinks(run(BUSY, dataclasses.replace(BASE, de_th=5))) == [(4, 11, 6)]
    assert shrinks(run(BUSY, dataclasses.replace(BASE, de_th=6))) == []


def test_no_shrink_during_the_first_h_steps() -> None:
    early = [10, 5, 5, 5, 5]
    # Step 1 has only one step of history (H = 2): it waits; step 2 shrinks (drop 2.5).
    assert shrinks(run(early)) == [(2, 11, 6)]


def test_wake_up_counts_a_shortfall_and_holds_off_shrinking() -> None:
    busy = [1, 10, 10, 10, 5, 5, 5, 5, 5, 5]
    out = run(busy)  # K = 3: the wake at step 1 holds shrinking off until step 4
    wake = [e for e in out.events if e.kind == "wake"]
    assert [(e.step, e.before, e.after, e.busy, e.shortfall) for e in wake] == [(1, 2, 11, 10, 8)]
    assert out.shortfall_steps == 1 and out.shortfall_node_steps == 8
    assert shrinks(out) == [(4, 11, 6)]
    # K = 4: step 4 is still held off; step 5 (drop (10 + 5) / 2 − 5 = 2.5) shrinks.
    assert shrinks(run(busy, dataclasses.replace(BASE, hold_off=4))) == [(5, 11, 6)]
    # K = 9: nothing shrinks before step 10, the end.
    assert shrinks(run(busy, dataclasses.replace(BASE, hold_off=9))) == []


def test_wake_up_is_capped_by_the_cluster_and_repeats_while_demand_climbs() -> None:
    out = run([2, 5, 8, 10], total=10)
    assert list(out.powered_on) == [3, 6, 9, 10]
    assert out.shortfall_steps == 3
    assert out.shortfall_node_steps == (5 - 3) + (8 - 6) + (10 - 9)


def test_a_smaller_cluster_switches_the_surplus_off() -> None:
    out = run([5, 5, 5], total=[20, 8, 20])
    assert list(out.powered_on) == [6, 6, 6]
    out = run([5, 5, 5], total=[20, 5, 20])
    assert [(e.kind, e.before, e.after) for e in out.events] == [("capacity", 6, 5)]
    assert list(out.powered_on) == [6, 5, 5]


def test_inputs_are_checked() -> None:
    busy, total = np.array([1, 2]), np.array([5, 5])
    good = np.zeros((2, BASE.max_horizon))
    with pytest.raises(ValueError, match="one row per step"):
        apply_rule(busy, total, np.zeros((3, 4)), BASE)
    with pytest.raises(ValueError, match="2F = 4"):
        apply_rule(busy, total, np.zeros((2, 3)), BASE)
    with pytest.raises(ValueError, match="exceeds"):
        apply_rule(np.array([1, 6]), total, good, BASE)
    with pytest.raises(ValueError, match="finite"):
        apply_rule(busy, total, np.full((2, 4), np.nan), BASE)
    with pytest.raises(ValueError, match="whole"):
        apply_rule(np.array([1.5, 2.0]), total, good, BASE)
    with pytest.raises(ValueError, match="at least 1"):
        RuleParams(history=0, future=1, his_th=0, fut_th=0, de_th=0, buffer=0, hold_off=0)


def test_the_five_published_presets() -> None:
    assert PRESET_NAMES == ("venus", "earth", "saturn", "uranus", "philly")
    expected = {
        "venus": (3, 18, 0.5, 1, 2, 5, 12),
        "earth": (6, 18, 1, 1, 5, 5, 12),
        "saturn": (6, 18, 1, 1, 1, 5, 12),
        "uranus": (3, 18, 1, 1, 1, 7, 12),
        "philly": (2, 30, 0.1, 0, 1, 20, 10),
    }
    for name, values in expected.items():
        assert tuple(PRESETS[name].to_dict().values()) == values
    assert get_preset("Philly") is PRESETS["philly"]
    with pytest.raises(ValueError, match="known: venus"):
        get_preset("mars")


@settings(max_examples=150, deadline=None)
@given(
    busy=st.lists(st.integers(0, 30), min_size=1, max_size=60),
    noise=st.lists(st.floats(-5, 5), min_size=1, max_size=60),
    history=st.integers(1, 4),
    future=st.integers(1, 4),
    buffer=st.integers(0, 5),
    hold_off=st.integers(0, 6),
    de_th=st.integers(0, 3),
)
def test_invariants(
    busy: list[int],
    noise: list[float],
    history: int,
    future: int,
    buffer: int,
    hold_off: int,
    de_th: int,
) -> None:
    params = RuleParams(history, future, 0.0, 0.0, de_th, buffer, hold_off)
    n = len(busy)
    b = np.asarray(busy)
    total = np.full(n, 32)
    forecasts = b[:, None] + np.resize(np.asarray(noise), (n, params.max_horizon))
    out = apply_rule(b, total, forecasts, params)
    on = out.powered_on
    assert np.all(on >= b) and np.all(on <= total)
    # The count changes only through events, and each event starts from the previous count.
    changes = {e.step: e for e in out.events}
    for i in range(1, n):
        if i in changes:
            assert changes[i].before == on[i - 1] and changes[i].after == on[i]
        else:
            assert on[i] == on[i - 1]
    # A shortfall step is exactly a step whose demand exceeds what the last one left on.
    short = [i for i in range(1, n) if b[i] > on[i - 1]]
    assert [e.step for e in out.events if e.kind == "wake"] == short
    # Shrinks always land on busy + B and never during a hold-off.
    wakes = [e.step for e in out.events if e.kind == "wake"]
    for e in out.events:
        if e.kind == "shrink":
            assert e.after == b[e.step] + buffer and e.before - e.after >= max(de_th, 1)
            assert all(not (w <= e.step < w + hold_off) for w in wakes)
            assert e.step >= history
