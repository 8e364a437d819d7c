"""The checks of the live-run harness (:mod:`dlsched.testing.live_run`) on hand-made job files:
what they must flag and what they must let pass."""

from __future__ import annotations

import os
from pathlib import Path

from dlsched.testing.live_run import (
    checkpoints_not_resumed,
    double_booked,
    exit_codes,
    exit_time_bound,
    not_completed_once,
)


def write(root: Path, rel: str, text: str, mtime: float | None = None) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def test_exit_codes_are_read_in_attempt_order_and_exactly_once_is_checked(
    tmp_path: Path,
) -> None:
    for name, code in [("j1.10", "0"), ("j1.2", "75"), ("j2.0", ""), ("j3.0", "0"), ("j3.1", "0")]:
        write(tmp_path, f"exits/{name}", code + "\n")
    write(tmp_path, "exits/j2.1.tmp", "0\n")  # never renamed: not an exit
    codes = exit_codes(tmp_path)
    assert codes == {"j1": ["75", "0"], "j2": ["?"], "j3": ["0", "0"]}
    records = [{"id": "j1"}, {"id": "j2"}, {"id": "j3"}, {"id": "j4"}]
    assert not_completed_once(records, codes) == ["j2", "j3", "j4"]


def test_overlapping_runs_on_one_gpu_are_flagged_and_a_killed_run_is_bounded(
    tmp_path: Path,
) -> None:
    write(tmp_path, "jobs/a/gpu_log.txt", "100 start node=n1 gpus=0,1\n110 stop\n")
    write(tmp_path, "jobs/b/gpu_log.txt", "105 start node=n1 gpus=1\n120 stop\n")
    write(tmp_path, "jobs/c/gpu_log.txt", "105 start node=n2 gpus=1\n")  # another node
    clashes, unstopped = double_booked(tmp_path)
    assert clashes == ["n1 GPU 1: a and b"] and unstopped == 1

    # A run killed without its stop line holds its GPUs until its exit file was written.
    (tmp_path / "jobs" / "b" / "gpu_log.txt").unlink()
    write(tmp_path, "jobs/d/gpu_log.txt", "200 start node=n2 gpus=1\n210 stop\n")
    write(tmp_path, "exits/c.0", "137\n", mtime=150.0)
    assert double_booked(tmp_path) == (["n2 GPU 1: c and d"], 1)
    assert double_booked(tmp_path, exit_time_bound(tmp_path)) == ([], 1)
    write(tmp_path, "exits/c.0", "137\n", mtime=205.0)
    assert double_booked(tmp_path, exit_time_bound(tmp_path)) == (["n2 GPU 1: c and d"], 1)


def test_a_checkpoint_not_resumed_from_is_reported(tmp_path: Path) -> None:
    write(tmp_path, "jobs/a/log.txt", "resumed from checkpoint at step 12\n")
    write(tmp_path, "jobs/b/log.txt", "resumed from checkpoint at step 0\n")
    write(tmp_path, "jobs/c/log.txt", "resumed from checkpoint at step 9\n" * 2)
    write(tmp_path, "jobs/e/log.txt", "resumed from checkpoint at step 9\n")
    write(tmp_path, "jobs/f/log.txt", "at step 9\nresumed from checkpoint at step 4\n" * 2)
    back = "resumed from checkpoint at step 9\nresumed from checkpoint at step 4\n"
    write(tmp_path, "jobs/g/log.txt", back)
    codes = {
        "a": ["75", "0"],
        "b": ["75", "0"],  # stopped before its first step: step 0 is a checkpoint too
        "c": ["143", "0"],
        "d": ["75", "0"],  # never resumed
        "e": ["75", "75", "0"],  # resumed once for two checkpoints
        "f": ["75", "75", "0"],
        "g": ["75", "75", "0"],  # the second resume went back to an older checkpoint
    }
    checkpointed, resumed, lost = checkpoints_not_resumed(tmp_path, codes)
    assert (checkpointed, resumed) == (9, 9)
    assert lost == [
        "d: exits ['75', '0'], resumed at steps []",
        "e: exits ['75', '75', '0'], resumed at steps [9]",
        "g: exits ['75', '75', '0'], resumed at steps [9, 4]",
    ]
