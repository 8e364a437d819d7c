"""The iteration model of one deployment (model, GPU, TP degree) for the simulator."""

from __future__ import annotations

from collections.abc import Sequence

from dlsched.serving.hardware import gpu_spec, model_shape
from dlsched.serving.names import PERF_MODELS
from dlsched.serving.perf.evaluate import split_by_roofline
from dlsched.serving.perf.interpolated import fit_interpolated
from dlsched.serving.perf.linear import fit_linear
from dlsched.serving.perf.measured import PerfPoint, load_perf_points
from dlsched.serving.perf.model import IterationModel
from dlsched.serving.perf.roofline import RooflineModel, fit_efficiencies

__all__ = ["PERF_MODELS", "deployment_model"]


def deployment_model(
    model: str,
    gpu: str,
    tp: int,
    kind: str = "fitted",
    points: Sequence[PerfPoint] | None = None,
) -> IterationModel:
    """The ``kind`` iteration model (:data:`~dlsched.serving.names.PERF_MODELS`) of ``model``
    on ``tp`` x ``gpu``, from ``points`` (the bundled measurements by default). ValueError for
    an unknown name, or for ``fitted`` or ``linear`` without measurements of that deployment
    (naming the measured ones)."""
    shape, spec = model_shape(model), gpu_spec(gpu)
    if kind not in PERF_MODELS:
        raise ValueError(f"unknown performance model {kind!r}; expected one of {PERF_MODELS}")
    kept, _ = split_by_roofline(points if points is not None else load_perf_points())
    if kind == "roofline":
        return RooflineModel(shape, spec, tp, *fit_efficiencies(kept))
    own = [p for p in kept if p.group == (model, gpu, tp)]
    if not own:
        measured = sorted({f"{m} on {t} x {g}" for m, g, t in (p.group for p in kept)})
        raise ValueError(
            f"no measurements of {model} on {tp} x {gpu} to fit; measured: "
            f"{', '.join(measured)} (or use the roofline performance model)"
        )
    return fit_linear(own) if kind == "linear" else fit_interpolated(own)
