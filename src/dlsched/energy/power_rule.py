"""The CES power rule of Helios (Hu et al., SC'21; seeds.md 1.4), as a pure function.

Per 10-minute step ``i``, with the nodes powered on after step ``i - 1`` carried over:

1. **Wake.** If fewer nodes are on than are busy, power on at once up to ``busy + B`` (never
   more than the cluster has). The step is a *shortfall step*: for up to one step, ``busy - on``
   nodes of demand had no powered node (jobs would have waited for a boot). Shrinking is held
   off until step ``i + K``.
2. **Shrink.** Otherwise cut to ``busy + B`` only when all of these hold:
   demand has been falling (mean of the ``H`` steps before ``i`` − ``busy[i]`` ≥ ``his_th``),
   the forecast is lower (``busy[i]`` − mean of the forecasts for steps ``i+1 … i+F`` ≥
   ``fut_th``), no rebound is forecast (that mean ≥ the mean for ``i+1 … i+2F``), the hold-off
   has passed (``i`` ≥ last wake + ``K``) and the cut is at least ``de_th`` nodes.

The forecasts are a matrix: row ``i`` holds what was predicted *at step i* for steps
``i+1 … i+2F``, so the caller decides (and can prove) what each prediction was allowed to see.
The Helios artifact averages predictions for ``i … i+F-1``; seeds.md says "the next F", which is
what this function uses. At step 0 the service starts with ``busy + B`` nodes on; the first ``H``
steps never shrink (their history window is incomplete). If the cluster's size drops below the
nodes on, the surplus is switched off with the cluster (a ``capacity`` event).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

EventKind = Literal["wake", "shrink", "capacity"]


@dataclass(frozen=True)
class RuleParams:
    """The seven CES parameters: ``history`` H and ``future`` F in steps, thresholds ``his_th``
    and ``fut_th`` in nodes (averages, so fractional values make sense), ``de_th`` the smallest
    cut in nodes, ``buffer`` B spare nodes kept on above demand, ``hold_off`` K steps without
    shrinking after a wake-up."""

    history: int
    future: int
    his_th: float
    fut_th: float
    de_th: int
    buffer: int
    hold_off: int

    def __post_init__(self) -> None:
        if self.history < 1 or self.future < 1:
            raise ValueError(
                f"history and future must be at least 1 step, got H={self.history}, F={self.future}"
            )
        if self.buffer < 0 or self.hold_off < 0 or self.de_th < 0:
            raise ValueError(
                "buffer, hold-off and de_th must be non-negative, got "
                f"B={self.buffer}, K={self.hold_off}, de_th={self.de_th}"
            )
        if not (np.isfinite(self.his_th) and np.isfinite(self.fut_th)):
            raise ValueError(f"thresholds must be finite, got {self.his_th}, {self.fut_th}")

    @property
    def max_horizon(self) -> int:
        """How many steps ahead the rule reads forecasts: 2F."""
        return 2 * self.future

    def to_dict(self) -> dict[str, Any]:
        """The parameters under their field names (JSON-ready)."""
        return asdict(self)


@dataclass(frozen=True)
class RuleEvent:
    """A change of the powered-on count at ``step``: from ``before`` to ``after`` nodes, with
    ``busy`` nodes in demand. ``shortfall`` is ``busy - before`` for a wake-up that found too
    few nodes on (always positive for ``wake``), else 0."""

    step: int
    kind: EventKind
    before: int
    after: int
    busy: int
    shortfall: int


@dataclass(frozen=True)
class RuleOutcome:
    """The powered-on nodes after each step's decision (``powered_on[i]`` ≥ ``busy[i]`` and
    ≤ ``total[i]``) and the changes that produced them, in step order. The start-up (step 0)
    is not an event."""

    powered_on: np.ndarray
    events: tuple[RuleEvent, ...]

    @property
    def shortfall_steps(self) -> int:
        """Steps at which demand exceeded the nodes left on by the previous step."""
        return sum(1 for e in self.events if e.kind == "wake")

    @property
    def shortfall_node_steps(self) -> int:
        """Sum over shortfall steps of the nodes missing (busy − on)."""
        return sum(e.shortfall for e in self.events)

    def count(self, kind: EventKind) -> int:
        """How many events of ``kind`` happened."""
        return sum(1 for e in self.events if e.kind == kind)


def apply_rule(
    busy: np.ndarray, total: np.ndarray, forecasts: np.ndarray, params: RuleParams
) -> RuleOutcome:
    """Run the CES rule (module docstring) over every step of ``busy``.

    ``busy`` and ``total`` are per-step node counts (integers, ``0 ≤ busy ≤ total``);
    ``forecasts`` has shape ``(len(busy), k)`` with ``k ≥ 2F``: ``forecasts[i, h-1]`` predicts
    the busy nodes at step ``i + h``. Only the first 2F columns are read. Raises ValueError for
    mismatched shapes, negative counts, busy above total or non-finite forecasts.
    """
    busy_i, total_i = _check_inputs(busy, total, forecasts, params)
    n = len(busy_i)
    h, f, b = params.history, params.future, params.buffer
    near = forecasts[:, :f].mean(axis=1) if n else np.zeros(0)
    far = forecasts[:, : 2 * f].mean(axis=1) if n else np.zeros(0)
    # Prefix sums give each step's history mean without an O(H) slice per step.
    csum = np.concatenate([[0], np.cumsum(busy_i)])
    on = np.zeros(n, dtype=np.int64)
    events: list[RuleEvent] = []
    hold_until = 0
    for i in range(n):
        now, cap = int(busy_i[i]), int(total_i[i])
        if i == 0:
            on[0] = min(now + b, cap)
            continue
        current = int(on[i - 1])
        if current > cap:
            events.append(RuleEvent(i, "capacity", current, cap, now, 0))
            current = cap
        if current < now:
            woken = min(now + b, cap)
            events.append(RuleEvent(i, "wake", current, woken, now, now - current))
            on[i] = woken
            hold_until = i + params.hold_off
            continue
        on[i] = current
        if i < h or i < hold_until:
            continue
        target = shrink_target(
            params, (csum[i] - csum[i - h]) / h, now, float(near[i]), float(far[i]), current
        )
        if target is not None:
            on[i] = target
            events.append(RuleEvent(i, "shrink", current, target, now, 0))
    return RuleOutcome(on, tuple(events))


def shrink_target(
    params: RuleParams, history_mean: float, busy: int, near: float, far: float, on: int
) -> int | None:
    """The shrink decision of one step (rule 2 of the module docstring), once the history
    window is full and the hold-off has passed: ``history_mean`` of busy nodes over the ``H``
    steps before, ``busy`` now, ``near``/``far`` the mean forecasts for the next ``F`` and
    ``2F`` steps, ``on`` nodes powered now. Returns the nodes to keep on, or None to keep all."""
    falling = history_mean - busy >= params.his_th
    lower = busy - near >= params.fut_th
    no_rebound = near >= far
    target = min(on, busy + params.buffer)
    if falling and lower and no_rebound and on - target >= params.de_th and target < on:
        return target
    return None


def _check_inputs(
    busy: np.ndarray, total: np.ndarray, forecasts: np.ndarray, params: RuleParams
) -> tuple[np.ndarray, np.ndarray]:
    busy = np.asarray(busy)
    total = np.asarray(total)
    if busy.ndim != 1 or total.shape != busy.shape:
        raise ValueError(
            f"busy and total must be 1-D of the same length, got {busy.shape} and {total.shape}"
        )
    if forecasts.ndim != 2 or forecasts.shape[0] != len(busy):
        raise ValueError(
            f"forecasts must have one row per step ({len(busy)}), got shape {forecasts.shape}"
        )
    if forecasts.shape[1] < params.max_horizon:
        raise ValueError(
            f"forecasts must reach 2F = {params.max_horizon} steps ahead, got "
            f"{forecasts.shape[1]} columns"
        )
    if not np.all(np.isfinite(forecasts[:, : params.max_horizon])):
        raise ValueError("forecasts must be finite")
    busy_i = busy.astype(np.int64)
    total_i = total.astype(np.int64)
    if np.any(busy_i != busy) or np.any(total_i != total):
        raise ValueError("busy and total must be whole node counts")
    if np.any(busy_i < 0):
        raise ValueError("busy node counts must be non-negative")
    if np.any(busy_i > total_i):
        first = int(np.argmax(busy_i > total_i))
        raise ValueError(
            f"step {first}: busy ({busy_i[first]}) exceeds the cluster's nodes ({total_i[first]})"
        )
    return busy_i, total_i
