"""The layered iteration-time model has the published scaling shape."""

from __future__ import annotations

import itertools

import pytest

from dlsched.ps.iteration import IterationModel
from dlsched.ps.zoo import network

BW = 25e9 / 8  # bytes/s of a 25 Gbit/s NIC


def throughput(model: IterationModel, workers: int, servers: int, bw: float = BW) -> float:
    return workers * model.batch / model.time(workers, servers, 8.0, bw, bw)


def test_more_workers_per_ps_saturates() -> None:
    model = IterationModel(network("resnet50"), 32)
    speeds = [throughput(model, w, 1) for w in (1, 2, 4, 8, 16, 32)]
    gains = [b - a for a, b in itertools.pairwise(speeds)]
    assert all(g > 0 for g in gains[:2])
    assert gains[-1] < 0.25 * gains[0]  # diminishing returns
    # Saturation level: the PS link, w·batch / (w · 2·params·4 B / B) samples per second.
    ceiling = 32 * BW / (2 * 4 * network("resnet50").params)
    assert speeds[-1] == pytest.approx(ceiling, rel=0.15)


def test_vgg16_scales_worse_than_resnet50() -> None:
    def speedup(name: str, workers: int, servers: int) -> float:
        model = IterationModel(network(name), 32)
        return throughput(model, workers, servers) / throughput(model, 1, 1)

    for workers, servers in ((8, 2), (16, 1), (16, 4)):
        assert speedup("vgg16", workers, servers) < 0.9 * speedup("resnet50", workers, servers)


def test_communication_overlaps_backward_pass() -> None:
    model = IterationModel(network("inception_v3"), 32)
    # With plenty of bandwidth the iteration is pure compute; with little, communication adds.
    assert model.time(1, 1, 8.0, 1e12, 1e12) == pytest.approx(model.compute_time(8.0), rel=1e-3)
    serial = model.compute_time(8.0) + 2 * 4 * network("inception_v3").params / BW
    assert model.compute_time(8.0) < model.time(1, 1, 8.0, BW, BW) < serial


def test_more_ps_and_more_bandwidth_help() -> None:
    model = IterationModel(network("vgg16"), 32)
    assert model.time(8, 4, 8.0, BW, BW) < model.time(8, 1, 8.0, BW, BW)
    assert model.time(4, 1, 8.0, 2 * BW, 2 * BW) < model.time(4, 1, 8.0, BW, BW)


def test_rejects_bad_shapes() -> None:
    model = IterationModel(network("resnet50"), 32)
    with pytest.raises(ValueError, match="at least one worker"):
        model.time(0, 1, 8.0, BW, BW)
    with pytest.raises(ValueError, match="batch"):
        IterationModel(network("resnet50"), 0)
