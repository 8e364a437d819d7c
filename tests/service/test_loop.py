"""The control loop's thread: a poke runs a cycle at the next poll, not only at the round."""

from __future__ import annotations

import time
from pathlib import Path

from dlsched.backends.fake import FakeBackend
from dlsched.cluster.parse import resolve_cluster
from dlsched.policy.registry import create_policy
from dlsched.service.control.controller import Controller
from dlsched.service.control.loop import ControlLoop
from dlsched.service.store.database import Store
from dlsched.service.store.records import PENDING, RUNNING, NewJob


def wait_state(store: Store, seq: int, state: str, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        row = store.get(seq)
        if row is not None and row.state == state:
            return True
        time.sleep(0.01)
    return False


def test_poke_starts_a_cycle_before_the_round(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    ctl = Controller(store, FakeBackend(time.time), resolve_cluster("2x4"), create_policy("fifo"))
    loop = ControlLoop(ctl, round_s=30.0, poll_s=0.02)
    loop.start()
    try:
        time.sleep(0.1)  # the first round has run; the next is 30 s away
        seq = store.submit(NewJob("a", "u", 1, ("sleep", "100")), time.time()).seq
        assert not wait_state(store, seq, RUNNING, 0.3), "no cycle without a poke or a round"
        assert store.get(seq).state == PENDING  # type: ignore[union-attr]
        loop.poke()
        assert wait_state(store, seq, RUNNING, 5.0)
        assert loop.alive and loop.error is None
    finally:
        loop.stop()
    assert not loop.alive
    store.close()
