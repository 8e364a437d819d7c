"""The interpolated step-time model: exact at measured points, monotone where the data are,
continuous and positive elsewhere."""

from __future__ import annotations

import functools
import itertools
import math
from collections import defaultdict

import numpy as np
import pytest

from dlsched.perf.profiles import APPLICATIONS, StepSample, load_profile
from dlsched.perf.steptime import StepTime, StepTimeModel


@functools.cache
def model(app: str, variant: str = "t4") -> StepTimeModel:
    return StepTimeModel(load_profile(app, variant))


@pytest.mark.parametrize("app", APPLICATIONS)
def test_exact_at_measured_placements(app: str) -> None:
    m = model(app)
    for s in load_profile(app).placements:
        got = m(s.nodes, s.replicas, s.local_bsz, placement=s.placement)
        assert got.step == pytest.approx(s.step_time, rel=1e-12)
        assert got.sync == pytest.approx(s.sync_time, rel=1e-12)


@pytest.mark.parametrize("app", APPLICATIONS)
def test_exact_at_measured_scalability_rows(app: str) -> None:
    # Pollux scalability rows (6+ nodes) are the only measurements of their shape.
    m = model(app)
    for s in load_profile(app).scalability:
        got = m(s.nodes, s.replicas, s.local_bsz)
        assert (got.step, got.sync) == pytest.approx((s.step_time, s.sync_time), rel=1e-12)


def test_shape_without_placement_is_the_mean_of_its_placements() -> None:
    p = load_profile("cifar10")
    rows = [s for s in p.placements if (s.nodes, s.replicas, s.local_bsz) == (2, 5, 64)]
    assert {s.placement for s in rows} == {(1, 4), (2, 3)}
    expected = sum(s.step_time for s in rows) / len(rows)
    assert model("cifar10")(2, 5, 64).step == pytest.approx(expected)


def _lines(samples: tuple[StepSample, ...]) -> dict[tuple[int, ...], list[StepSample]]:
    lines: dict[tuple[int, ...], list[StepSample]] = defaultdict(list)
    for s in samples:
        lines[s.placement].append(s)
    return lines


@pytest.mark.parametrize("app", APPLICATIONS)
def test_monotone_in_local_batch_where_the_data_are(app: str) -> None:
    # Between two neighbouring measured batch sizes the answer moves monotonically from one
    # measurement to the other, whichever way the data go.
    m = model(app)
    for placement, rows in _lines(load_profile(app).placements).items():
        rows.sort(key=lambda s: s.local_bsz)
        for a, b in itertools.pairwise(rows):
            grid = np.linspace(a.local_bsz, b.local_bsz, 7)
            steps = [m(len(placement), sum(placement), x, placement).step for x in grid]
            sign = 1.0 if b.step_time >= a.step_time else -1.0
            assert all(sign * (y - x) >= -1e-12 for x, y in itertools.pairwise(steps))
            assert steps[0] == pytest.approx(a.step_time) and steps[-1] == pytest.approx(
                b.step_time
            )


def test_log_linear_between_measured_replica_counts() -> None:
    # 12 nodes were measured with 40 and 48 replicas; 44 lies between, linear in log replicas.
    m = model("imagenet")
    lo, hi = m(12, 40, 81), m(12, 48, 81)
    w = math.log(44 / 40) / math.log(48 / 40)
    assert m(12, 44, 81).step == pytest.approx((1 - w) * lo.step + w * hi.step)
    between = sorted([lo.step, hi.step])
    assert between[0] <= m(12, 44, 81).step <= between[1]


def test_interpolates_between_node_counts() -> None:
    # 10 nodes was never measured; 8 and 12 nodes both were with 24 replicas.
    m = model("cifar10")
    lo, hi = m(8, 24, 128).step, m(12, 24, 128).step
    assert min(lo, hi) <= m(10, 24, 128).step <= max(lo, hi)


@pytest.mark.parametrize("app", APPLICATIONS)
def test_extrapolation_is_positive_and_continuous(app: str) -> None:
    m = model(app)
    lo, hi = load_profile(app).local_bsz_range
    # Continuity at the measured batch limits of a single replica.
    for edge in (lo, hi):
        inside, outside = m(1, 1, edge), m(1, 1, edge * (1 + 1e-9))
        assert outside.step == pytest.approx(inside.step, rel=1e-6)
    for shape in ((5, 5), (32, 128), (24, 60), (1, 1)):
        t = m(*shape, hi * 2)
        assert t.step > 0 and 0 <= t.sync <= t.step
    # More replicas over more nodes never get cheaper than the largest measured allocation
    # at the same local batch when the model extrapolates.
    assert m(32, 128, lo).step >= m(16, 64, lo).step * 0.99


def test_unmeasured_placement_falls_back_to_its_shape() -> None:
    m = model("bert", "dgx")
    # 2 nodes x 8 GPUs was measured, (8, 1) only as its rotation (1, 8).
    assert m(2, 9, 8, placement=(8, 1)) == m(2, 9, 8, placement=(1, 8))
    # Five nodes were never measured on the DGX: the answer comes from the model.
    assert m(5, 10, 8, placement=(2, 2, 2, 2, 2)).step > 0


def test_accumulation_adds_compute_per_micro_step() -> None:
    t = StepTime(step=1.0, sync=0.25)
    assert t.with_accumulation(0) == 1.0
    assert t.with_accumulation(3) == pytest.approx(1.0 + 3 * 0.75)
    m = model("cifar10")
    assert m.iteration_time(2, 8, 128, 2) == pytest.approx(m(2, 8, 128).with_accumulation(2))
    with pytest.raises(ValueError):
        t.with_accumulation(-1)


def test_bad_queries() -> None:
    m = model("ncf")
    with pytest.raises(ValueError):
        m(2, 1, 64)
    with pytest.raises(ValueError):
        m(1, 1, 0)
    with pytest.raises(ValueError, match="is not"):
        m(2, 4, 64, placement=(1, 1))
