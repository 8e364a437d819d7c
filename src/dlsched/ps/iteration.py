"""Per-iteration time of a parameter-server (PS) job: our reconstruction of SMD's layered model.

Yu et al. (INFOCOM'21) model training time from the network's layers; their exact equations
were not available to us, so this is our own model built from the same ingredients:

- Compute: forward time ``F = Σ_l flops_l · batch / rate`` and backward time ``2F`` (each
  layer's backward costs twice its forward), on a GPU with sustained ``rate`` FLOP/s.
- Communication: each worker pushes layer l's gradient and pulls its new parameters,
  ``2·s_l`` bytes (``s_l`` = 4 bytes × params). The PS side receives ``w`` pushes spread over
  ``p`` servers, ``2·s_l·w/p`` bytes per server. With per-task bandwidths ``b_w`` (worker) and
  ``b_p`` (server) a layer's transfer takes ``c_l = max(2·s_l/b_w, 2·s_l·w/(p·b_p)) + latency``.
- Overlap: the backward pass runs from the last layer to the first; layer l's transfer starts
  once its gradient is ready and the previous transfer has finished (one link, in order). The
  next forward pass needs every parameter back, so an iteration lasts
  ``F + max(2F, end of the last transfer)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from dlsched.ps.zoo import NetworkProfile

BYTES_PER_PARAM = 4
LAYER_LATENCY_S = 1e-4
"""Fixed cost of one layer's push/pull round trip (request handling, message set-up)."""

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class IterationModel:
    """The iteration time of one network at one per-worker batch (see the module docstring)."""

    network: NetworkProfile
    batch: int
    _bwd_flops: FloatArray = field(init=False, repr=False, compare=False)
    _bytes: FloatArray = field(init=False, repr=False, compare=False)
    _messages: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.batch < 1:
            raise ValueError(f"batch must be >= 1, got {self.batch}")
        # Backward order: last layer first.
        layers = self.network.layers[::-1]
        flops = np.array([2.0 * layer.flops * self.batch for layer in layers])
        sizes = np.array([2.0 * BYTES_PER_PARAM * layer.params for layer in layers])
        # Parameter-free layers send nothing; their backward time delays the next sender.
        object.__setattr__(self, "_bwd_flops", np.cumsum(flops))
        object.__setattr__(self, "_bytes", sizes)
        object.__setattr__(self, "_messages", int(np.count_nonzero(sizes)))

    def forward_time(self, gpu_tflops: float) -> float:
        """Seconds of one forward pass."""
        return float(self._bwd_flops[-1]) / 2.0 / (gpu_tflops * 1e12)

    def time(
        self,
        workers: int,
        servers: int,
        gpu_tflops: float,
        worker_bytes_per_s: float,
        server_bytes_per_s: float,
    ) -> float:
        """Seconds per iteration with ``workers`` workers and ``servers`` PS, the slowest
        worker GPU's sustained TFLOP/s and each side's slowest per-task bandwidth (bytes/s)."""
        if workers < 1 or servers < 1:
            raise ValueError(f"need at least one worker and one PS, got {workers}, {servers}")
        if min(gpu_tflops, worker_bytes_per_s, server_bytes_per_s) <= 0:
            raise ValueError("rates and bandwidths must be positive")
        rate = gpu_tflops * 1e12
        forward = float(self._bwd_flops[-1]) / 2.0 / rate
        ready = self._bwd_flops / rate
        per_byte = max(1.0 / worker_bytes_per_s, workers / (servers * server_bytes_per_s))
        transfer = self._bytes * per_byte + np.where(self._bytes > 0, LAYER_LATENCY_S, 0.0)
        # end = max_j (ready_j + Σ_{k ≥ j} transfer_k): the in-order transfer pipeline.
        tail = np.cumsum(transfer[::-1])[::-1]
        comm_end = float(np.max(ready + tail))
        return forward + max(float(ready[-1]), comm_end)

    def times(
        self,
        workers: FloatArray,
        servers: FloatArray,
        gpu_tflops: FloatArray,
        worker_bytes_per_s: FloatArray,
        server_bytes_per_s: FloatArray,
    ) -> FloatArray:
        """:meth:`time` for arrays of configurations at once (same length each; inputs
        assumed valid)."""
        rate = np.asarray(gpu_tflops, dtype=float)[:, None] * 1e12
        ready = self._bwd_flops[None, :] / rate
        per_byte = np.maximum(
            1.0 / np.asarray(worker_bytes_per_s, dtype=float),
            np.asarray(workers, dtype=float)
            / (np.asarray(servers, dtype=float) * np.asarray(server_bytes_per_s, dtype=float)),
        )
        latency = np.where(self._bytes > 0, LAYER_LATENCY_S, 0.0)
        transfer = self._bytes[None, :] * per_byte[:, None] + latency[None, :]
        tail = np.cumsum(transfer[:, ::-1], axis=1)[:, ::-1]
        comm_end = np.max(ready + tail, axis=1)
        forward = ready[:, -1] / 2.0
        return np.asarray(forward + np.maximum(ready[:, -1], comm_end), dtype=float)

    def compute_time(self, gpu_tflops: float) -> float:
        """Seconds of forward plus backward with no communication at all."""
        return 3.0 * self.forward_time(gpu_tflops)
