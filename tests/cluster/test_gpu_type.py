"""GPU-type matching between job requests and node types."""

from __future__ import annotations

import pytest

from dlsched.cluster.shorthand import parse_shorthand
from dlsched.cluster.spec import gpu_type_alternatives, gpu_type_matches


@pytest.mark.parametrize(
    ("requested", "node_type", "expected"),
    [
        (None, "V100", True),
        (None, "", True),
        ("", "T4", True),
        ("  ", "T4", True),
        ("|", "T4", True),
        ("V100", "V100", True),
        ("v100", "V100", True),
        ("V100", "v100", True),
        (" V100 ", "V100", True),
        ("V100", "V100M16", False),
        ("V100M16", "V100", False),
        ("T4", "V100", False),
        ("V100M16|V100M32", "V100M32", True),
        ("V100M16|V100M32", "v100m16", True),
        ("V100M16|V100M32", "V100", False),
        ("V100M16 | V100M32", "V100M32", True),
        ("A10|G2|P100|T4|V100M16|V100M32|V100M32", "G2", True),
        ("A10|T4", "P100", False),
        ("T4|", "T4", True),
        ("T4|", "P100", False),
    ],
)
def test_gpu_type_matches(requested: str | None, node_type: str, expected: bool) -> None:
    assert gpu_type_matches(requested, node_type) is expected


def test_alternatives_are_folded_deduplicated_and_ordered() -> None:
    assert gpu_type_alternatives("V100M16|v100m32|V100M32") == ("v100m16", "v100m32")
    assert gpu_type_alternatives(None) == ()
    assert gpu_type_alternatives(" | ") == ()


def test_gpus_matching_counts_gpus_of_matching_nodes() -> None:
    spec = parse_shorthand("v100m16:2x8,v100m32:1x4,t4:3x2")
    assert spec.gpus_matching(None) == 26
    assert spec.gpus_matching("V100M16|V100M32") == 20
    assert spec.gpus_matching("T4") == 6
    assert spec.gpus_matching("A100") == 0
