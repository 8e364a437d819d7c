"""Loading the bundled training profiles: every application and GPU variant, with the
encodings the files use."""

from __future__ import annotations

import pytest

from dlsched.perf.efficiency import EPOCHS
from dlsched.perf.profiles import (
    APPLICATIONS,
    SOURCE_VARIANTS,
    VARIANTS,
    canonical_placement,
    load_profile,
    parse_placement,
    profile_for_gpu_type,
    profiles_dir,
)

# Validated global batch sizes per application, as published.
VALIDATED = {
    "bert": (12, 24, 48, 96, 192, 384),
    "cifar10": (128, 256, 512, 1024, 2048, 4096),
    "deepspeech2": (20, 40, 80, 160, 320, 640),
    "imagenet": (200, 400, 800, 1600, 3200, 6400, 12800),
    "ncf": (256, 512, 1024, 2048, 4096, 8192, 16384, 32768),
    "yolov3": (8, 16, 32, 64, 128, 256, 512),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("app", APPLICATIONS)
def test_every_bundled_profile_loads(app: str, variant: str) -> None:
    p = load_profile(app, variant)
    assert (p.app, p.variant, p.gpu_type) == (app, variant, VARIANTS[variant].gpu_type)
    assert p.placements and p.scalability
    for s in p.samples:
        assert s.step_time > 0 and 0 <= s.sync_time <= s.step_time
        assert 1 <= s.nodes <= s.replicas and s.local_bsz > 0
        if s.placement:
            assert (len(s.placement), sum(s.placement)) == (s.nodes, s.replicas)
            assert max(s.placement) <= p.gpus_per_node
    assert tuple(c.global_bsz for c in p.validation) == VALIDATED[app]
    assert all(len(c.progress) == EPOCHS[app] for c in p.validation)


def test_pollux_t4_sizes() -> None:
    p = load_profile("cifar10")
    assert (len(p.placements), len(p.scalability)) == (1183, 329)
    assert p.local_bsz_range == (32, 1024)
    assert {s.nodes for s in p.placements} == {1, 2, 3, 4}
    assert {s.nodes for s in p.scalability} == {6, 8, 12, 16}
    # The first row of placements.csv.
    first = p.placements[0]
    assert (first.placement, first.local_bsz) == ((1,), 32)
    assert first.step_time == pytest.approx(0.0427886962890625)


def test_placement_strings_are_necklaces() -> None:
    # Every measured string is already its smallest rotation, and distinct rotation classes of
    # the same counts are distinct measurements.
    keys = {s.placement for s in load_profile("bert").placements}
    assert all(canonical_placement(k) == k for k in keys)
    assert (1, 2, 3) in keys and (1, 3, 2) in keys and (2, 1, 3) not in keys
    assert (1, 1, 2, 2) in keys and (1, 2, 1, 2) in keys and (1, 2, 2, 1) not in keys
    assert len(keys) == 108


def test_canonical_placement() -> None:
    assert canonical_placement([3, 1, 2]) == (1, 2, 3)
    assert canonical_placement([2, 1, 3]) == (1, 3, 2)
    assert canonical_placement([0, 4, 0, 1]) == (1, 4)
    assert canonical_placement([]) == ()
    assert parse_placement("1243") == (1, 2, 4, 3)
    with pytest.raises(ValueError):
        parse_placement("1x")
    with pytest.raises(ValueError):
        canonical_placement([1, -1])


def test_sia_files_that_differ_in_layout() -> None:
    # Column order differs and "20.0" batch sizes appear; both read to the same numbers.
    p = load_profile("imagenet", "dgx")
    assert {s.local_bsz for s in p.scalability} == {20, 28, 40, 57, 81, 115, 163, 200}
    assert load_profile("bert", "azure").placements[0].step_time == pytest.approx(
        0.19173000752925873
    )


def test_gpu_type_lookup_and_errors() -> None:
    assert profile_for_gpu_type("bert", "a100").variant == "dgx-ext"
    assert profile_for_gpu_type("bert", "T4").variant == "t4"
    with pytest.raises(ValueError, match="no profile for GPU type"):
        profile_for_gpu_type("bert", "K80")
    with pytest.raises(ValueError, match="unknown application"):
        load_profile("gpt3")
    with pytest.raises(ValueError, match="unknown GPU variant"):
        load_profile("bert", "tpu")
    assert set(SOURCE_VARIANTS["sia"]) == set(VARIANTS)


def test_bundle_stays_small() -> None:
    size = sum(f.stat().st_size for f in profiles_dir().rglob("*") if f.is_file())
    assert size < 4_000_000
