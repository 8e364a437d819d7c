"""A generated image-classification task, deterministic from a seed. Needs PyTorch.

Each of the 10 classes has a template: a random 4×4 colour pattern scaled up to 32×32 (smooth
blobs of colour). A sample is its class template plus Gaussian pixel noise. The batch starting
at sample offset ``k`` of the stream is a pure function of ``(seed, k, size)``, so a job resumed
from a checkpoint at offset ``k`` sees exactly the data it would have seen without the break
(at an unchanged batch size).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dlsched.workloads.models import IMAGE_SHAPE, NUM_CLASSES

_MIX = 0x9E3779B97F4A7C15  # odd 64-bit constant: spreads seeds and offsets over the seed space


class SyntheticImages:
    """The sample stream of one seed. ``noise`` is the pixel noise's standard deviation
    relative to the templates' (1.0 by default: a hard but learnable task)."""

    def __init__(self, seed: int, noise: float = 1.0) -> None:
        if noise < 0:
            raise ValueError(f"noise must be >= 0, got {noise}")
        self.seed = seed
        self.noise = noise
        g = torch.Generator().manual_seed(_mix(seed, 0))
        coarse = torch.randn(NUM_CLASSES, IMAGE_SHAPE[0], 4, 4, generator=g)
        self.templates = F.interpolate(
            coarse, size=IMAGE_SHAPE[1:], mode="bilinear", align_corners=False
        )

    def batch(self, offset: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Images ``(size, 3, 32, 32)`` and labels ``(size,)`` of samples ``offset`` to
        ``offset + size − 1`` of the stream."""
        if offset < 0 or size < 1:
            raise ValueError(f"need offset >= 0 and size >= 1, got {offset}, {size}")
        g = torch.Generator().manual_seed(_mix(self.seed, offset + 1))
        labels = torch.randint(0, NUM_CLASSES, (size,), generator=g)
        noise = torch.randn(size, *IMAGE_SHAPE, generator=g) * self.noise
        return self.templates[labels] + noise, labels


def _mix(seed: int, offset: int) -> int:
    return (seed * _MIX + offset) % (1 << 63)
