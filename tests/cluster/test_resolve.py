"""``resolve_cluster``: built-in names, .toml paths and shorthands."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlsched.cluster.errors import ClusterFormatError
from dlsched.cluster.parse import resolve_cluster
from dlsched.cluster.shorthand import parse_shorthand
from dlsched.cluster.toml_io import write_cluster_toml


def test_builtin_names() -> None:
    assert resolve_cluster("pollux").total_gpus == 64
    assert resolve_cluster("PHILLY-VCS").name == "philly-vcs"


def test_toml_path(tmp_path: Path) -> None:
    path = write_cluster_toml(parse_shorthand("v100:3x8"), tmp_path / "c.toml")
    spec = resolve_cluster(str(path))
    assert spec.total_gpus == 24
    assert spec.source == str(path)


def test_toml_path_with_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    write_cluster_toml(parse_shorthand("2x4"), tmp_path / "c.toml")
    assert resolve_cluster("~/c.toml").total_gpus == 8


def test_missing_toml_file(tmp_path: Path) -> None:
    with pytest.raises(ClusterFormatError, match="does not exist"):
        resolve_cluster(str(tmp_path / "nope.toml"))


def test_invalid_toml_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('name = "x"\n[[nodes]]\ncount = 1\n', encoding="utf-8")
    with pytest.raises(ClusterFormatError, match=r"bad\.toml: nodes\[0\]\.gpus"):
        resolve_cluster(str(path))


def test_shorthand() -> None:
    assert resolve_cluster(" v100:16x4,k80:8x4 ").total_gpus == 96


@pytest.mark.parametrize("text", ["", "polux", "a:b", "32x", "cluster.yaml"])
def test_unresolvable_lists_builtins_files_and_grammar(text: str) -> None:
    with pytest.raises(ClusterFormatError) as info:
        resolve_cluster(text)
    message = str(info.value)
    for part in ("philly-vcs", "pollux", "alibaba-2023", ".toml", "[TYPE:]COUNTxGPUS"):
        assert part in message
    assert "as a shorthand:" in message


def test_typo_of_builtin_gets_a_suggestion() -> None:
    with pytest.raises(ClusterFormatError, match="did you mean 'pollux'"):
        resolve_cluster("polux")


def test_existing_file_without_toml_suffix_is_pointed_out(tmp_path: Path) -> None:
    path = tmp_path / "cluster.txt"
    path.write_text("", encoding="utf-8")
    with pytest.raises(ClusterFormatError, match=r"exists but does not end in \.toml"):
        resolve_cluster(str(path))
