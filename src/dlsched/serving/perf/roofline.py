"""The analytic roofline: an iteration takes at least its FLOPs over the GPUs' peak FLOP/s and
at least its bytes over their memory bandwidth; measured times sit above that bound by an
efficiency per phase, fitted from measurements of other deployments.

FLOPs: 2 per parameter per token processed plus the attention pairs (``ModelShape``); bytes:
the weights once per iteration, the KV cache read by every decode step and written by every
prefill token. All of it is split over the ``tp`` GPUs of the replica.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from dlsched.serving.hardware import GpuSpec, ModelShape, gpu_spec, model_shape
from dlsched.serving.perf.measured import PerfPoint
from dlsched.serving.perf.model import chunk_pairs


@dataclass(frozen=True)
class RooflineModel:
    """The bound of ``model`` on ``tp`` x ``gpu`` divided by the phase's efficiency (the
    prefill's when the iteration has prompt tokens, the decode's otherwise). The number of
    prompts of a prefill does not change the FLOPs or bytes, so it is not read."""

    model: ModelShape
    gpu: GpuSpec
    tp: int
    prefill_efficiency: float = 1.0
    decode_efficiency: float = 1.0

    def bound(
        self, prefill_tokens: int, prefill_pairs: float, decode_seqs: int, decode_context: int
    ) -> float:
        """Seconds the iteration takes at the GPUs' peaks (0 for an empty one)."""
        if not prefill_tokens and not decode_seqs:
            return 0.0
        m = self.model
        flops = m.flops_per_token() * (prefill_tokens + decode_seqs) + (
            m.attention_flops_per_pair() * (prefill_pairs + decode_context)
        )
        moved = m.weight_bytes + m.kv_bytes_per_token * (decode_context + prefill_tokens)
        return max(
            flops / (self.tp * self.gpu.peak_flops),
            moved / (self.tp * self.gpu.memory_bandwidth),
        )

    def iteration_time(
        self,
        prefill_tokens: int,
        prefill_pairs: float,
        prefill_seqs: int,
        decode_seqs: int,
        decode_context: int,
    ) -> float:
        efficiency = self.prefill_efficiency if prefill_tokens else self.decode_efficiency
        return self.bound(prefill_tokens, prefill_pairs, decode_seqs, decode_context) / efficiency

    def prefill_time(self, point: PerfPoint) -> float:
        """Predicted prefill of ``point``'s batch."""
        pairs = point.batch * chunk_pairs(point.prompt, 0)
        return self.iteration_time(point.batch * point.prompt, pairs, point.batch, 0, 0)

    def decode_time(self, point: PerfPoint) -> float:
        """Predicted mean decode iteration of ``point``'s batch."""
        return self.iteration_time(0, 0.0, 0, point.batch, round(point.decode_context))


def roofline_for(point: PerfPoint, prefill: float = 1.0, decode: float = 1.0) -> RooflineModel:
    """The roofline of ``point``'s deployment with the given phase efficiencies."""
    return RooflineModel(model_shape(point.model), gpu_spec(point.gpu), point.tp, prefill, decode)


def fit_efficiencies(points: Sequence[PerfPoint]) -> tuple[float, float]:
    """The median of bound / measured over ``points``, for prefill and for decode."""
    if not points:
        raise ValueError("fitting efficiencies needs at least one measured point")
    prefill = [roofline_for(p).prefill_time(p) / p.prefill_s for p in points]
    decode = [roofline_for(p).decode_time(p) / p.decode_s for p in points]
    return statistics.median(prefill), statistics.median(decode)
