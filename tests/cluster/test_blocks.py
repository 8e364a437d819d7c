"""Blocks in cluster files: node -> rack -> block, with errors naming the field."""

from __future__ import annotations

import pytest

from dlsched.cluster.errors import ClusterFormatError
from dlsched.cluster.spec import DEFAULT_BLOCK
from dlsched.cluster.toml_io import format_cluster_toml, parse_cluster_toml

TWO_BLOCKS = """
name = "spine"

[[nodes]]
count = 4
gpus = 8
rack_size = 2
block = "b0"

[[nodes]]
count = 2
gpus = 8
rack = "r9"
block = "b1"
"""


def test_groups_put_their_racks_in_their_block() -> None:
    spec = parse_cluster_toml(TWO_BLOCKS, "spine.toml")
    assert [(n.rack, n.block) for n in spec.nodes] == [
        ("rack0", "b0"),
        ("rack0", "b0"),
        ("rack1", "b0"),
        ("rack1", "b0"),
        ("r9", "b1"),
        ("r9", "b1"),
    ]


def test_block_defaults_to_one_block_and_is_not_written_then() -> None:
    spec = parse_cluster_toml('name = "x"\n[[nodes]]\ncount = 2\ngpus = 4\n')
    assert {n.block for n in spec.nodes} == {DEFAULT_BLOCK}
    assert "block" not in format_cluster_toml(spec)


def test_blocks_round_trip_through_the_writer() -> None:
    spec = parse_cluster_toml(TWO_BLOCKS)
    text = format_cluster_toml(spec)
    assert 'block = "b1"' in text
    assert parse_cluster_toml(text).nodes == spec.nodes


def test_a_rack_in_two_blocks_is_refused_naming_the_group_and_field() -> None:
    body = TWO_BLOCKS + '\n[[nodes]]\ncount = 1\ngpus = 8\nrack = "r9"\nblock = "b2"\n'
    with pytest.raises(ClusterFormatError) as info:
        parse_cluster_toml(body, "spine.toml")
    message = str(info.value)
    assert message.startswith("spine.toml: nodes[2].block: rack 'r9' is already in block 'b1'")
    assert "(nodes[1])" in message and "got 'b2'" in message


@pytest.mark.parametrize("value", ['""', "3", '"  "'])
def test_a_bad_block_value_names_the_field(value: str) -> None:
    body = f'name = "x"\n[[nodes]]\ncount = 1\ngpus = 4\nblock = {value}\n'
    with pytest.raises(ClusterFormatError, match=r"f\.toml: nodes\[0\]\.block: expected a non"):
        parse_cluster_toml(body, "f.toml")
