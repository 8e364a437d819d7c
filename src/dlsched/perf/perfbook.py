"""Per-run access to the performance models of every (application, GPU variant), memoized.

One :class:`PerfBook` is built per simulation and shared by the simulator and its policy, so the
interpolations of :mod:`dlsched.perf` are computed once per configuration. The simulator's truth
and the policies' estimates both come from here; policies that should not know the truth (ONES,
Optimus) use only measurements the simulator hands them, plus what they derive.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from dlsched.perf.efficiency import EfficiencyModel, efficiency_model
from dlsched.perf.goodput import BatchConfig, BatchLimits, Goodput, GoodputModel, batch_limits
from dlsched.perf.profiles import APPLICATIONS, load_profile
from dlsched.perf.steptime import StepTimeModel

_TYPE_ALIASES = {
    "gpu": "t4",  # an untyped cluster (e.g. the shorthand 16x4) is taken as the Pollux testbed
    "t4": "t4",
    "v100": "azure",
    "azure": "azure",
    "a100": "dgx-ext",
    "dgx": "dgx-ext",
    "dgx-ext": "dgx-ext",
    "rtx6000": "quad",
    "quad": "quad",
    "rtx2080ti": "rtx",
    "rtx": "rtx",
}


def variant_for_gpu_type(gpu_type: str) -> str:
    """The profile variant of a cluster GPU type: a variant key (``t4``, ``azure``, ``dgx``,
    ``quad``, ``rtx``) or a GPU name (``T4``, ``V100``, ``A100``, ``RTX6000``, ``RTX2080Ti``),
    case-insensitive; the untyped ``gpu`` is the T4 testbed. ValueError for anything else."""
    key = gpu_type.strip().casefold()
    if key in _TYPE_ALIASES:
        return _TYPE_ALIASES[key]
    known = ", ".join(sorted(_TYPE_ALIASES))
    raise ValueError(f"no step-time profile for GPU type {gpu_type!r}; profiled types: {known}")


def check_application(app: str) -> None:
    """ValueError unless ``app`` is a profiled application."""
    if app not in APPLICATIONS:
        raise ValueError(f"unknown application {app!r}; profiled: {', '.join(APPLICATIONS)}")


class PerfBook:
    """Memoized step times, efficiency and goodput (module docstring)."""

    def __init__(self) -> None:
        self._steps: dict[tuple[str, str], StepTimeModel] = {}
        self._step_cache: dict[tuple[str, str, tuple[int, ...], int, int], float] = {}

    def step_model(self, app: str, variant: str) -> StepTimeModel:
        key = (app, variant)
        model = self._steps.get(key)
        if model is None:
            model = _step_model(app, variant)
            self._steps[key] = model
        return model

    def goodput_model(self, app: str, variant: str) -> GoodputModel:
        return _goodput_model(app, variant)

    def revision(self, app: str) -> int:
        """A number that changes whenever the step times this book gives for ``app`` change
        (never here: the profiles are fixed; the live service's book feeds in measurements).
        A policy caching a model derived from them keys it with this."""
        return 0

    def efficiency(self, app: str) -> EfficiencyModel:
        return efficiency_model(app)

    def limits(self, app: str) -> BatchLimits:
        return batch_limits(load_profile(app))

    def iteration_time(
        self,
        app: str,
        variant: str,
        placement: Sequence[int],
        local_bsz: int,
        accum_steps: int = 0,
    ) -> float:
        """Seconds per optimizer step of ``placement`` (GPUs per node) on ``variant``."""
        key = (app, variant, tuple(placement), local_bsz, accum_steps)
        found = self._step_cache.get(key)
        if found is None:
            counts = key[2]
            step = self.step_model(app, variant)(len(counts), sum(counts), local_bsz, counts)
            found = step.with_accumulation(accum_steps)
            self._step_cache[key] = found
        return found

    def mixed_iteration_time(
        self,
        app: str,
        variants: Sequence[str],
        placement: Sequence[int],
        local_bsz: int,
        accum_steps: int = 0,
    ) -> float:
        """A synchronous data-parallel step runs at the pace of its slowest GPU type: the
        largest step time of ``placement`` over the ``variants`` it spans."""
        return max(
            self.iteration_time(app, v, placement, local_bsz, accum_steps)
            for v in dict.fromkeys(variants)
        )

    def best_batch(self, app: str, variant: str, epoch: int, nodes: int, replicas: int) -> Goodput:
        """The goodput-maximizing batch of ``replicas`` GPUs on ``nodes`` nodes at ``epoch``."""
        return _best_batch(app, variant, epoch, nodes, replicas)

    def fixed_batch(self, app: str, replicas: int, global_bsz: int) -> BatchConfig:
        """How a job with a fixed global batch splits it over ``replicas`` GPUs: the local
        batch ``ceil(M / replicas)``, with accumulation steps when that exceeds the largest
        local batch the application may use, capped so the global batch stays within the
        validated range (the Pollux artifact's rule for its non-adaptive baselines)."""
        if replicas < 1:
            raise ValueError(f"replicas must be >= 1, got {replicas}")
        lim = self.limits(app)
        local = math.ceil(global_bsz / replicas - 1e-8)
        accum = max(math.ceil(local / lim.max_local_bsz - 1e-8) - 1, 0)
        atomic = math.ceil(local / (accum + 1) - 1e-8)
        atomic = min(atomic, lim.max_global_bsz // (replicas * (accum + 1)))
        return BatchConfig(max(atomic, 1), accum)

    def isolated_time(self, app: str, variant: str, gpus: int, global_bsz: int, gpn: int) -> float:
        """Seconds ``app`` needs alone on ``gpus`` consolidated GPUs (``gpn`` per node) at a
        fixed global batch, from the start: the time-integral of progress over its epochs."""
        eff = self.efficiency(app)
        placement = consolidated_counts(gpus, gpn)
        config = self.fixed_batch(app, gpus, global_bsz)
        m = config.global_bsz(gpus)
        t = self.iteration_time(app, variant, placement, config.local_bsz, config.accum_steps)
        total, done = 0.0, 0.0
        for e, need in enumerate(eff.required):
            total += (need - done) * t / eff.gain(e, m)
            done = need
        return total


@functools.cache
def _step_model(app: str, variant: str) -> StepTimeModel:
    # Building one fits the Pollux model (seconds); the result is immutable, so runs share it.
    return StepTimeModel(load_profile(app, variant))


@functools.cache
def _goodput_model(app: str, variant: str) -> GoodputModel:
    # Pure functions of the fixed profiles, shared by every run of a process: the batch search
    # is the costliest part of an elastic run.
    return GoodputModel(
        load_profile(app, variant), step_model=_MemoSteps(_step_model(app, variant))
    )


@functools.cache
def _best_batch(app: str, variant: str, epoch: int, nodes: int, replicas: int) -> Goodput:
    return _goodput_model(app, variant).best_batch(epoch, nodes, replicas)


class _MemoSteps:
    """A step model answering each (nodes, replicas, local batch, accumulation) once: the
    batch search asks the same ones for every epoch."""

    def __init__(self, model: StepTimeModel) -> None:
        self._model = model
        self._memo: dict[tuple[int, int, float, int], float] = {}

    def iteration_time(
        self, nodes: int, replicas: int, local_bsz: float, accum_steps: int = 0
    ) -> float:
        key = (nodes, replicas, local_bsz, accum_steps)
        found = self._memo.get(key)
        if found is None:
            found = self._model.iteration_time(nodes, replicas, local_bsz, accum_steps)
            self._memo[key] = found
        return found


def consolidated_counts(gpus: int, gpus_per_node: int) -> tuple[int, ...]:
    """``gpus`` on as few nodes of ``gpus_per_node`` as possible: full nodes, then the rest."""
    if gpus < 1 or gpus_per_node < 1:
        raise ValueError(f"need positive gpus and gpus_per_node, got {gpus}, {gpus_per_node}")
    full, rest = divmod(gpus, gpus_per_node)
    return (gpus_per_node,) * full + ((rest,) if rest else ())
