from __future__ import annotations

import pytest

from dlsched.sim.engine import Engine


def test_events_run_in_time_priority_then_insertion_order() -> None:
    engine = Engine()
    seen: list[str] = []
    engine.schedule(5.0, 1, seen.append, "t5-p1")
    engine.schedule(5.0, 0, seen.append, "t5-p0")
    engine.schedule(1.0, 9, seen.append, "t1")
    engine.schedule(5.0, 0, seen.append, "t5-p0-second")
    engine.run()
    assert seen == ["t1", "t5-p0", "t5-p0-second", "t5-p1"]
    assert engine.now == 5.0
    assert engine.events_processed == 4


def test_scheduling_into_the_past_raises() -> None:
    engine = Engine()
    engine.schedule(3.0, 0, lambda _: engine.schedule(1.0, 0, print))
    with pytest.raises(ValueError, match="past"):
        engine.run()


def test_callback_errors_propagate_and_stop_leaves_queue() -> None:
    engine = Engine()

    def boom(_: object) -> None:
        raise KeyError("bug")

    engine.schedule(1.0, 0, boom)
    with pytest.raises(KeyError):
        engine.run()
    engine.schedule(2.0, 0, lambda _: engine.stop())
    engine.schedule(3.0, 0, print)
    engine.run()
    assert len(engine) == 1 and engine.now == 2.0


def test_run_until_leaves_later_events() -> None:
    engine = Engine()
    seen: list[float] = []
    for t in (1.0, 2.0, 10.0):
        engine.schedule(t, 0, seen.append, t)
    engine.run(until=5.0)
    assert seen == [1.0, 2.0] and engine.now == 5.0 and engine.peek_time() == 10.0
