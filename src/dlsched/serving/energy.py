"""Energy of a serving run: each replica's GPUs draw idle power for the whole run and extra
power while they run iterations, so power follows the replica's utilization.

Per GPU, a replica draws the simulator's idle power (:class:`~dlsched.sim.config.PowerConfig`,
the same figure a job run charges) for the run's span, plus an extra draw for the seconds it
runs iterations. The extra draw is measured where the bundled Splitwise measurements have
power columns for the deployment (model, GPU, tensor-parallel degree): the mean
``average_power`` of its points (a fraction of the GPU's rated power) times the rated power
(NVIDIA data sheets: A100-80GB SXM 400 W, H100-80GB SXM 700 W; the power-capped H100 keeps the
H100's rating, as its fractions are of it). Elsewhere it is the simulator's
``busy_extra_w_per_gpu``. A run beside training takes the cluster simulation's energy and
replaces the busy draw it charged the replica jobs with this model's
(:func:`~dlsched.serving.colocated.training_summary`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import fmean

from dlsched.serving.cluster import ServingRun
from dlsched.serving.perf.measured import PerfPoint, load_perf_points
from dlsched.serving.replica_count import replica_steps
from dlsched.sim.config import PowerConfig

RATED_W = {"a100-80gb": 400.0, "h100-80gb": 700.0, "h100-80gb-pcap": 700.0}


@dataclass(frozen=True)
class ServingPower:
    """Watts per GPU of a replica: ``idle_w`` always, ``busy_extra_w`` more while it runs an
    iteration; ``source`` says where ``busy_extra_w`` comes from."""

    idle_w: float
    busy_extra_w: float
    source: str


def serving_power(
    model: str, gpu: str, tp: int, points: tuple[PerfPoint, ...] | None = None
) -> ServingPower:
    """The power model of a replica of ``model`` on ``tp`` x ``gpu`` (module docstring);
    ``points``: the measurements to read (the bundled ones by default)."""
    base = PowerConfig()
    found = [
        p.average_power
        for p in (load_perf_points() if points is None else points)
        if p.group == (model, gpu, tp) and p.average_power is not None
    ]
    if found and gpu in RATED_W:
        extra = fmean(found) * RATED_W[gpu]
        source = f"measured: mean average_power {fmean(found):.3f} x {RATED_W[gpu]:g} W rated"
        return ServingPower(base.idle_w_per_gpu, extra, source)
    return ServingPower(base.idle_w_per_gpu, base.busy_extra_w_per_gpu, "simulator power model")


def serving_energy(
    run: ServingRun, power: ServingPower, tp: int, held_s: float | None = None
) -> dict[str, float | str | None]:
    """Energy (J) and GPU utilization of ``run``, whose replicas of ``tp`` GPUs were held for
    ``held_s`` replica-seconds in all (default: each from the first arrival to the last
    response); null when nothing was served."""
    arrivals, _, _ = run.trace.arrays()
    finishes = [f for f in run.log.finish if not math.isnan(f)]
    if not finishes or not len(arrivals):
        return {"energy_j": None, "gpu_utilization": None, "power_source": power.source}
    if held_s is None:
        held_s = run.replicas * (max(finishes) - float(arrivals[0]))
    busy = sum(run.log.busy)
    return {
        "energy_j": tp * (power.idle_w * held_s + power.busy_extra_w * busy),
        "gpu_utilization": busy / held_s if held_s > 0 else None,
        "power_source": power.source,
    }


def plain_extra(run: ServingRun, model: str, gpu: str, tp: int) -> dict[str, object]:
    """The summary figures of a run on a fixed set of replicas (alive from time 0 to its
    end): energy, GPU utilization, power source and the replica count."""
    extra: dict[str, object] = dict(serving_energy(run, serving_power(model, gpu, tp), tp))
    extra["replica_count"] = replica_steps([(0.0, math.inf)] * run.replicas)
    return extra
