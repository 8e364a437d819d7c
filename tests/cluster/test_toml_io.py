"""Cluster files: parsing, validation messages, and the writer's round trip."""

from __future__ import annotations

import os
import re
import stat
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.cluster.errors import ClusterFormatError
from dlsched.cluster.layout import NodeGroup, expand_groups
from dlsched.cluster.shorthand import parse_shorthand
from dlsched.cluster.spec import ClusterSpec, NodeSpec
from dlsched.cluster.toml_io import (
    format_cluster_toml,
    parse_cluster_toml,
    read_cluster_toml,
    write_cluster_toml,
)

EXAMPLE = """
name = "two-vcs"
description = "example"

[[nodes]]
count = 20
gpus = 8
gpu_type = "V100"
partition = "vc-a"
rack_size = 8
cpus = 64
memory_mib = 262144

[[nodes]]
gpus = 4
gpu_type = "T4"
partition = "vc-b"
rack = "r-t4"
names = ["t4-a", "t4-b"]

[[nodes]]
count = 2
gpus = 0
name_prefix = "cpu"
"""


def test_parse_example() -> None:
    spec = parse_cluster_toml(EXAMPLE, source="ex.toml")
    assert (spec.name, spec.description, spec.source) == ("two-vcs", "example", "ex.toml")
    assert len(spec.nodes) == 24
    assert spec.partitions == ("vc-a", "vc-b", "default")
    first = spec.nodes[0]
    assert first == NodeSpec("v100-000", 8, "V100", "vc-a", "rack0", 64.0, 262144.0)
    assert [n.rack for n in spec.nodes[:20]] == ["rack0"] * 8 + ["rack1"] * 8 + ["rack2"] * 4
    assert [(n.name, n.rack) for n in spec.nodes[20:22]] == [("t4-a", "r-t4"), ("t4-b", "r-t4")]
    assert [(n.name, n.gpus, n.gpu_type, n.rack) for n in spec.nodes[22:]] == [
        ("cpu-000", 0, "gpu", "rack3"),
        ("cpu-001", 0, "gpu", "rack3"),
    ]
    assert spec.nodes[22].cpus is None and spec.nodes[22].memory_mib is None


def test_read_file_sets_source_to_path(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(EXAMPLE, encoding="utf-8")
    spec = read_cluster_toml(path)
    assert spec.source == str(path)
    assert spec.total_gpus == 20 * 8 + 2 * 4


def _bad(body: str) -> str:
    with pytest.raises(ClusterFormatError) as info:
        parse_cluster_toml(textwrap.dedent(body), source="bad.toml")
    return str(info.value)


GROUP0 = 'name = "c"\n[[nodes]]\ncount = 1\ngpus = 8\n'


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (GROUP0 + "gpu = 8\n", ["bad.toml", "nodes[0]", "unknown key 'gpu'", "did you mean"]),
        (
            GROUP0 + '[[nodes]]\ncount = 2\ngpus = "eight"\n',
            ["bad.toml", "nodes[1].gpus", "integer >= 0", "'eight'"],
        ),
        (GROUP0 + "[[nodes]]\ncount = 0\ngpus = 8\n", ["nodes[1].count", "integer >= 1"]),
        (GROUP0 + "[[nodes]]\ncount = true\ngpus = 8\n", ["nodes[1].count", "True"]),
        (GROUP0 + "[[nodes]]\ncount = 2\n", ["nodes[1].gpus", "missing"]),
        (GROUP0 + "[[nodes]]\ngpus = 2\n", ["nodes[1].count", "missing"]),
        (GROUP0 + "[[nodes]]\ncount = 1\ngpus = -1\n", ["nodes[1].gpus", "-1"]),
        (GROUP0 + "cpus = -2\n", ["nodes[0].cpus", "finite number >= 0"]),
        (GROUP0 + "cpus = nan\n", ["nodes[0].cpus", "expected a finite number"]),
        (GROUP0 + 'memory_mib = "1G"\n', ["nodes[0].memory_mib", "MiB"]),
        (GROUP0 + 'gpu_type = "V100|T4"\n', ["nodes[0].gpu_type", "without '|'"]),
        (GROUP0 + 'gpu_type = ""\n', ["nodes[0].gpu_type", "non-empty"]),
        (GROUP0 + 'partition = " "\n', ["nodes[0].partition", "non-empty string"]),
        (GROUP0 + "rack = 3\n", ["nodes[0].rack", "non-empty string"]),
        (GROUP0 + 'rack = "r"\nrack_size = 4\n', ["nodes[0]", "not both"]),
        (GROUP0 + "rack_size = 0\n", ["nodes[0].rack_size", "integer >= 1"]),
        (GROUP0 + 'names = ["a", "b"]\n', ["nodes[0].names", "count = 1", "got 2"]),
        (GROUP0 + "names = []\n", ["nodes[0].names", "non-empty array"]),
        (GROUP0 + 'names = ["a"]\nname_prefix = "p"\n', ["nodes[0]", "not both"]),
        (
            GROUP0 + '[[nodes]]\ngpus = 1\nnames = ["node-000"]\n',
            ["nodes[1]", "'node-000'", "already used in nodes[0]"],
        ),
        (GROUP0 + "[nodes.x]\n", ["nodes[0]", "unknown key 'x'"]),
        (GROUP0 + "gpus = 9\n", ["bad.toml", "not valid TOML"]),
        ('name = "c"\nnodes = 3\n', ["bad.toml: nodes", "non-empty array"]),
        ('name = "c"\nnodes = []\n', ["bad.toml: nodes", "non-empty array"]),
        ('name = "c"\n', ["bad.toml: nodes", "missing", "[[nodes]]"]),
        ("[[nodes]]\ncount = 1\ngpus = 8\n", ["bad.toml: name", "missing"]),
        (
            'name = ""\n[[nodes]]\ncount = 1\ngpus = 8\n',
            ["bad.toml: name: expected a non-empty string"],
        ),
        (GROUP0.replace('"c"', '"c"\nnodez = 1'), ["top level", "unknown key 'nodez'"]),
        ('name = "c"\ndescription = 5\n[[nodes]]\ncount = 1\ngpus = 1\n', ["description"]),
        ("name = \n", ["bad.toml", "not valid TOML"]),
    ],
)
def test_errors_name_file_group_and_field(body: str, expected: list[str]) -> None:
    message = _bad(body)
    for part in expected:
        assert part in message, (part, message)


def test_non_utf8_file_is_a_format_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes('name = "caf\xe9"\n'.encode("latin-1"))
    with pytest.raises(ClusterFormatError, match=re.escape("latin1.toml: not UTF-8")):
        read_cluster_toml(path)


# ---------------------------------------------------------------- round trip

_text = st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=12).filter(
    lambda s: s.strip() != ""
)
_gpu_type = st.one_of(
    st.sampled_from(["gpu", "V100", "t4", "A100-80GB", "G2"]),
    _text.filter(lambda s: "|" not in s and s.strip() == s),
)
_amount = st.one_of(
    st.none(),
    st.integers(min_value=0, max_value=10**6),
    st.floats(min_value=0, max_value=1e12, allow_nan=False, allow_infinity=False),
)


@st.composite
def _node_lists(draw: st.DrawFn) -> list[NodeSpec]:
    """Arbitrary nodes, often repeating attributes so that groups form."""
    count = draw(st.integers(min_value=1, max_value=25))
    names = draw(st.lists(_text, min_size=count, max_size=count, unique=True))
    templates = draw(
        st.lists(
            st.tuples(
                st.integers(0, 16),
                _gpu_type,
                st.one_of(st.just("default"), _text),
                st.one_of(st.sampled_from(["rack0", "rack1"]), _text),
                _amount,
                _amount,
            ),
            min_size=1,
            max_size=4,
        )
    )
    picks = draw(st.lists(st.integers(0, len(templates) - 1), min_size=count, max_size=count))
    return [NodeSpec(name, *templates[i]) for name, i in zip(names, picks, strict=True)]


_groups = st.lists(
    st.builds(
        NodeGroup,
        count=st.integers(1, 40),
        gpus=st.integers(0, 8),
        gpu_type=st.sampled_from(["gpu", "V100", "T4"]),
        partition=st.sampled_from(["default", "vc1", "vc2"]),
        rack=st.one_of(st.none(), st.sampled_from(["rack1", "r-x"])),
        rack_size=st.integers(1, 20),
        cpus=_amount,
        memory_mib=_amount,
        name_prefix=st.one_of(st.none(), st.sampled_from(["p", "q", "node"])),
    ),
    min_size=1,
    max_size=6,
)


@st.composite
def _specs(draw: st.DrawFn) -> ClusterSpec:
    nodes = draw(st.one_of(_node_lists(), _groups.map(expand_groups)))
    description = draw(st.one_of(st.just(""), st.text(st.characters(codec="utf-8"))))
    return ClusterSpec(draw(_text), tuple(nodes), description, "test")


@settings(max_examples=150, deadline=None)
@given(_specs())
def test_format_then_parse_round_trips(spec: ClusterSpec) -> None:
    back = parse_cluster_toml(format_cluster_toml(spec))
    assert back.name == spec.name
    assert back.description == spec.description
    assert back.nodes == spec.nodes


@settings(max_examples=50, deadline=None)
@given(_groups)
def test_generated_names_are_not_written_out(groups: list[NodeGroup]) -> None:
    spec = ClusterSpec("g", tuple(expand_groups(groups)))
    assert "names = [" not in format_cluster_toml(spec)


def test_identical_consecutive_nodes_collapse_into_one_group() -> None:
    text = format_cluster_toml(parse_shorthand("16x8,v100:4x4"))
    assert text.count("[[nodes]]") == 2
    assert "count = 16" in text and "count = 4" in text
    assert "names" not in text and "name_prefix" not in text


def test_write_then_read_round_trips(tmp_path: Path) -> None:
    spec = parse_cluster_toml(EXAMPLE)
    path = write_cluster_toml(spec, tmp_path / "sub" / "cluster.toml")
    assert path == tmp_path / "sub" / "cluster.toml"
    back = read_cluster_toml(path)
    assert back.nodes == spec.nodes
    assert (back.name, back.description) == (spec.name, spec.description)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert sorted(p.name for p in path.parent.iterdir()) == ["cluster.toml"]


def test_write_replaces_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "cluster.toml"
    path.write_text("old", encoding="utf-8")
    write_cluster_toml(parse_shorthand("2x8"), path)
    assert read_cluster_toml(path).total_gpus == 16


def test_unwritable_spec_leaves_existing_file_and_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "cluster.toml"
    path.write_text("old", encoding="utf-8")
    bad = ClusterSpec("bad", (NodeSpec("n0", 1, "V100|T4"),))
    with pytest.raises(ClusterFormatError, match="cannot write cluster 'bad'"):
        write_cluster_toml(bad, path)
    assert path.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["cluster.toml"]


@pytest.mark.parametrize(
    "node",
    [NodeSpec("n", 1, cpus=-1.0), NodeSpec("n", 1, memory_mib=float("inf")), NodeSpec(" ", 1)],
)
def test_unrepresentable_nodes_are_refused(node: NodeSpec) -> None:
    with pytest.raises(ClusterFormatError, match="cannot write"):
        format_cluster_toml(ClusterSpec("c", (node,)))


@pytest.mark.parametrize(
    ("groups", "field", "reason"),
    [
        ("count = 100000000000\ngpus = 8", "nodes[0].count", "more than the limit of 100000"),
        ("count = 2\ngpus = 99999999999999", "nodes[0].gpus", "more than the limit of 1024"),
        ("count = 99999\ngpus = 1024", "nodes", "GPUs in all is more than the limit of 1000000"),
    ],
)
def test_cluster_sizes_over_the_limits_are_refused_before_building(
    groups: str, field: str, reason: str
) -> None:
    with pytest.raises(ClusterFormatError, match=re.escape(f"{field}: ") + ".*" + reason):
        parse_cluster_toml(f'name = "big"\n[[nodes]]\n{groups}\n', "big.toml")
    with pytest.raises(ClusterFormatError, match="nodes in all"):
        parse_cluster_toml(
            'name = "big"\n' + "[[nodes]]\ncount = 60000\ngpus = 1\n" * 2, "big.toml"
        )
