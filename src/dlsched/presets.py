"""Named experiment setups from the literature, ready to simulate.

``helios-philly``: the Philly setup of the Helios evaluation (Hu et al., SC'21, seeds.md 1.2) —
the bundled Philly jobs submitted 2017-10-01..2017-11-30 (GPU jobs only), the 11 VCs of
``philly_vc.csv`` on 8-GPU nodes (built-in cluster ``philly-vcs``; jobs of other VCs are set
aside and counted, as the evaluation drops them), consolidated placement.

Our Philly subset (82,247 jobs, as processed by the Pollux artifact) is much lighter than the one
the Helios artifact replayed: at the published VC sizes FIFO barely queues (average queueing
about 100 s, against the artifact's 56,531 s). The preset therefore fixes a *load scale* L: every
submit time is divided by L (arrivals come L times faster; durations and the cluster are
unchanged). L was chosen by :func:`calibrate_load` so that FIFO's average queueing delay lands
near the artifact's; ``dlsched preset calibrate helios-philly`` reruns that search.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from dlsched.trace.bundled import bundled_trace_path

if TYPE_CHECKING:
    from dlsched.runner import Experiment, Selection
    from dlsched.sim.config import SimConfig

# The runner and the simulator (numpy, pyarrow, the policies) are imported by what runs a
# preset, not by listing them: ``dlsched preset list`` imports neither.

HELIOS_ARTIFACT_FIFO_QUEUE_S = 56_531.0
"""Average FIFO queueing delay of the Helios artifact on Philly (seeds.md 1.2)."""

HELIOS_PHILLY_LOAD_SCALE = 6.98
"""Calibrated with ``calibrate_load`` (seed 0): FIFO average queueing 56,074 s (target 56,531 s)."""


@dataclass(frozen=True)
class Preset:
    """A named setup: trace, cluster, job selection (submit times from ``start`` to ``end``,
    GPU jobs only with ``gpu_only``) and placement; policies vary per run."""

    name: str
    description: str
    trace: str
    cluster: str
    start: str | None = None
    end: str | None = None
    gpu_only: bool = False
    placement: str = "consolidate"
    default_load_scale: float = 1.0

    @property
    def selection(self) -> Selection:
        """The preset's job selection at load scale 1."""
        from dlsched.runner import Selection

        return Selection(start=self.start, end=self.end, gpu_only=self.gpu_only)

    def experiment(self, sim: SimConfig, load_scale: float | None = None) -> Experiment:
        """The experiment for ``sim`` (its policy, estimator, seed...) under this preset. The
        preset's placement replaces ``sim.placement``; ``load_scale`` overrides the default."""
        from dlsched.runner import Experiment

        scale = self.default_load_scale if load_scale is None else load_scale
        if not (scale > 0 and math.isfinite(scale)):
            raise ValueError(f"load scale must be positive and finite, got {scale}")
        selection = replace(self.selection, submit_scale=1.0 / scale)
        return Experiment(
            trace=self.trace,
            cluster=self.cluster,
            sim=replace(sim, placement=self.placement),
            selection=selection,
        )


def presets() -> dict[str, Preset]:
    """All presets by name."""
    helios = Preset(
        name="helios-philly",
        description=(
            "Helios evaluation on Philly: 11 VCs, GPU jobs submitted 2017-10-01..11-30, "
            "consolidate placement, arrivals compressed by the calibrated load scale"
        ),
        trace=str(bundled_trace_path("philly_2017-10-01_2017-12-01")),
        cluster="philly-vcs",
        start="2017-10-01",
        end="2017-12-01",
        gpu_only=True,
        default_load_scale=HELIOS_PHILLY_LOAD_SCALE,
    )
    return {helios.name: helios}


def get_preset(name: str) -> Preset:
    found = presets()
    if name not in found:
        raise ValueError(f"unknown preset {name!r}; available: {', '.join(sorted(found))}")
    return found[name]


def fifo_queue_at(preset: Preset, load_scale: float, seed: int = 0) -> float:
    """Average FIFO queueing delay (s) of ``preset`` at ``load_scale``."""
    from dlsched.cluster.parse import resolve_cluster
    from dlsched.runner import load_trace
    from dlsched.sim.config import SimConfig
    from dlsched.sim.simulator import simulate

    exp = preset.experiment(SimConfig(policy="fifo", seed=seed), load_scale)
    summary = simulate(load_trace(exp), resolve_cluster(exp.cluster), exp.sim).summary
    return float(summary["avg_queue_s"] or 0.0)


def calibrate_load(
    preset: Preset,
    target_queue_s: float = HELIOS_ARTIFACT_FIFO_QUEUE_S,
    low: float = 1.0,
    high: float = 20.0,
    steps: int = 14,
    seed: int = 0,
    report: Callable[[float, float], None] | None = None,
) -> tuple[float, float]:
    """Find a load scale whose FIFO average queueing is closest to ``target_queue_s``.

    Bisection on log(L) between ``low`` and ``high``, assuming queueing grows with load (it does
    on this trace; each probe is reported through ``report(L, queue)``). Returns the best probe
    (L rounded to 3 significant digits, its queueing)."""
    probes: list[tuple[float, float]] = []

    def probe(scale: float) -> float:
        scale = float(f"{scale:.3g}")
        queue = fifo_queue_at(preset, scale, seed)
        probes.append((scale, queue))
        if report is not None:
            report(scale, queue)
        return queue

    if probe(high) < target_queue_s:
        raise ValueError(f"even load scale {high} gives less queueing than {target_queue_s} s")
    lo, hi = math.log(low), math.log(high)
    for _ in range(steps):
        mid = (lo + hi) / 2
        if probe(math.exp(mid)) < target_queue_s:
            lo = mid
        else:
            hi = mid
    return min(probes, key=lambda p: abs(p[1] - target_queue_s))
