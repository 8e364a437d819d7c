"""Small residual CNNs for 32×32 RGB images (CIFAR-sized), by name. Needs PyTorch.

Each model is a ResNet in the shape of He et al., "Deep Residual Learning for Image
Recognition" (CVPR 2016), section 4.2 (the CIFAR-10 networks): a 3×3 stem, three stages of basic
blocks at widths w, 2w, 4w with stride 2 between stages, global average pooling, one linear
layer. The names fix the width and the blocks per stage; they are small enough to train on CPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import torch
from torch import nn


@dataclass(frozen=True)
class ResNetShape:
    """Width of the first stage and basic blocks per stage (three stages)."""

    width: int
    blocks: int


MODELS: Mapping[str, ResNetShape] = MappingProxyType(
    {
        "resnet-tiny": ResNetShape(width=8, blocks=1),
        "resnet-small": ResNetShape(width=16, blocks=1),
        "resnet-medium": ResNetShape(width=16, blocks=2),
    }
)
"""Every model by name."""

NUM_CLASSES = 10
IMAGE_SHAPE = (3, 32, 32)


class UnknownModelError(ValueError):
    """The model name is not one of :data:`MODELS`; the message lists them."""


class _BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, 3, padding=1, bias=False),
            nn.BatchNorm2d(cout),
        )
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = torch.relu(self.body(x) + self.shortcut(x))
        return out


def build_model(name: str) -> nn.Module:
    """A freshly initialized model (initialization follows torch's global RNG: seed it first).
    Raises :class:`UnknownModelError` naming the known models if ``name`` is not one."""
    if name not in MODELS:
        raise UnknownModelError(f"unknown model {name!r}; available: {', '.join(sorted(MODELS))}")
    shape = MODELS[name]
    layers: list[nn.Module] = [
        nn.Conv2d(IMAGE_SHAPE[0], shape.width, 3, padding=1, bias=False),
        nn.BatchNorm2d(shape.width),
        nn.ReLU(inplace=True),
    ]
    cin = shape.width
    for stage in range(3):
        cout = shape.width * 2**stage
        for b in range(shape.blocks):
            layers.append(_BasicBlock(cin, cout, stride=2 if stage > 0 and b == 0 else 1))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, NUM_CLASSES)]
    return nn.Sequential(*layers)
