"""The ``32x8`` / ``v100:16x4,k80:8x4`` shorthand."""

from __future__ import annotations

import pytest

from dlsched.cluster.errors import ClusterFormatError
from dlsched.cluster.shorthand import MAX_SHORTHAND_NODES, ShorthandError, parse_shorthand
from dlsched.cluster.spec import DEFAULT_PARTITION


def test_untyped_groups() -> None:
    spec = parse_shorthand("32x8")
    assert spec.name == "32x8"
    assert spec.source == "shorthand"
    assert len(spec.nodes) == 32
    assert spec.total_gpus == 256
    assert spec.partitions == (DEFAULT_PARTITION,)
    assert spec.gpu_types == ("gpu",)
    assert [n.name for n in spec.nodes[:2]] == ["node-000", "node-001"]
    assert spec.nodes[-1].name == "node-031"


def test_typed_groups_names_and_racks() -> None:
    spec = parse_shorthand("v100:16x4,k80:8x4")
    assert spec.gpu_types == ("v100", "k80")
    assert [n.name for n in spec.nodes[:16]] == [f"v100-{i:03d}" for i in range(16)]
    assert [n.name for n in spec.nodes[16:]] == [f"k80-{i:03d}" for i in range(8)]
    assert {n.rack for n in spec.nodes[:16]} == {"rack0"}
    assert {n.rack for n in spec.nodes[16:]} == {"rack1"}
    assert spec.total_gpus == 96


def test_racks_hold_sixteen_nodes_and_every_group_starts_a_rack() -> None:
    spec = parse_shorthand("40x8,3x2")
    racks = [n.rack for n in spec.nodes]
    assert racks == ["rack0"] * 16 + ["rack1"] * 16 + ["rack2"] * 8 + ["rack3"] * 3


def test_repeated_type_continues_numbering() -> None:
    spec = parse_shorthand("v100:2x8,V100:2x4")
    assert [n.name for n in spec.nodes] == ["v100-000", "v100-001", "v100-002", "v100-003"]
    assert [n.gpu_type for n in spec.nodes] == ["v100", "v100", "V100", "V100"]


def test_names_widen_past_three_digits() -> None:
    spec = parse_shorthand("1001x1")
    assert spec.nodes[999].name == "node-999"
    assert spec.nodes[1000].name == "node-1000"


def test_blanks_and_upper_case_x_are_accepted_and_canonicalized() -> None:
    spec = parse_shorthand(" t4:2X4 , 1x8 ")
    assert spec.name == "t4:2x4,1x8"
    assert [n.gpus for n in spec.nodes] == [4, 4, 8]


def test_same_text_gives_equal_specs() -> None:
    assert parse_shorthand("a100:3x8,2x4") == parse_shorthand("a100:3x8,2x4")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("32x", "GPUS is missing"),
        ("x8", "COUNT is missing"),
        ("0x8", "COUNT must be >= 1, got 0"),
        ("4x0", "GPUS must be >= 1, got 0"),
        ("a:b", "missing 'x'"),
        ("32", "missing 'x'"),
        ("3x4x5", "more than one 'x'"),
        ("-1x8", "COUNT '-1' is not a decimal integer"),
        ("1.5x8", "COUNT '1.5' is not a decimal integer"),
        ("4xeight", "GPUS 'eight' is not a decimal integer"),
        ("\uff11x8", "is not a decimal integer"),
        (":2x8", "TYPE '' is not a valid GPU type name"),
        ("v100|t4:2x8", "TYPE 'v100|t4' is not a valid GPU type name"),
        ("v 100:2x8", "TYPE 'v 100' is not a valid GPU type name"),
        ("a:b:2x8", "more than one ':'"),
        ("32x8,", "empty group"),
        (",32x8", "empty group"),
        ("32x8,,4x4", "empty group"),
        (f"{MAX_SHORTHAND_NODES + 1}x8", "more than the limit"),
        ("2x100000000000", "GPUs per node is more than the limit of 1024"),
        ("99999x999", "GPUs in all is more than the limit of 1000000"),
        ("60000x1,60000x1", "nodes in all is more than the limit of 100000"),
    ],
)
def test_bad_shorthand_names_token_reason_and_grammar(text: str, reason: str) -> None:
    with pytest.raises(ShorthandError) as info:
        parse_shorthand(text)
    message = str(info.value)
    assert reason in info.value.reason
    assert repr(text) in message
    assert "[TYPE:]COUNTxGPUS" in message
    assert isinstance(info.value, ClusterFormatError)
    assert isinstance(info.value, ValueError)


def test_bad_group_is_named_among_good_ones() -> None:
    with pytest.raises(ValueError, match=r"group 'k80:8x'"):
        parse_shorthand("v100:16x4,k80:8x")
