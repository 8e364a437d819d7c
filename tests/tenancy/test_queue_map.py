"""Queue maps: trace VC/user -> LocalQueue and priority class, and their errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlsched.tenancy.errors import TenancyError
from dlsched.tenancy.queue_map import QueueMap, read_queue_map


def test_user_wins_over_vc_then_default(tmp_path: Path) -> None:
    path = tmp_path / "map.toml"
    path.write_text(
        'default = "ns/shared"\n[vc]\nv1 = "ns/team1"\n[user]\nalice = "ns/urgent"\n'
        '[priority_class.vc]\nv1 = "high"\n[priority_class.user]\nbob = "low"\n'
    )
    qmap = read_queue_map(path)
    assert qmap.queue_ref("v1", "alice") == "ns/urgent"
    assert qmap.queue_ref("v1", "bob") == "ns/team1"
    assert qmap.queue_ref("v2", None) == "ns/shared"
    assert qmap.priority_class("v1", "bob") == "low"
    assert qmap.priority_class("v1", None) == "high"
    assert qmap.priority_class(None, None) is None


def test_without_a_map_each_vc_has_its_queue() -> None:
    assert QueueMap().queue_ref("vc-a", "alice") == "vc-a"
    assert QueueMap().queue_ref(None, "alice") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("queues = 1\n", "unknown key 'queues'"),
        ("[vc]\nv1 = 3\n", r"\[vc\]: expected a table of names to names"),
        ('default = ""\n', "default: expected a LocalQueue name"),
        ("[priority_class]\nv1 = 'x'\n", r"\[priority_class\]: expected the tables"),
        ("[vc\n", "not valid TOML"),
    ],
)
def test_bad_queue_maps_name_the_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "map.toml"
    path.write_text(text)
    with pytest.raises(TenancyError, match=message) as info:
        read_queue_map(path)
    assert str(info.value).startswith(str(path))
