"""The model zoo: named networks with their per-layer profile and a default per-worker batch.

Every entry is built from its architecture (``zoo_cnn``, ``zoo_transformer``); totals are sums
over layers. ``sample`` says what one training example is (an image, a sequence).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from dlsched.ps.layers import Layer
from dlsched.ps.zoo_cnn import inception_v3, resnet50, vgg16
from dlsched.ps.zoo_transformer import bert_base, gpt2_xl, transformer_base


@dataclass(frozen=True, slots=True)
class NetworkProfile:
    """A network's layers in forward order and the batch one worker trains with by default.
    ``params``, ``flops`` (forward, per sample) and ``activations`` (output elements per
    sample kept for the backward pass) are the sums over its layers."""

    name: str
    layers: tuple[Layer, ...]
    batch: int
    sample: str
    params: int = field(init=False)
    flops: float = field(init=False)
    activations: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", sum(layer.params for layer in self.layers))
        object.__setattr__(self, "flops", sum(layer.flops for layer in self.layers))
        object.__setattr__(self, "activations", sum(layer.activations for layer in self.layers))


_BUILDERS: Mapping[str, tuple[Callable[[], tuple[Layer, ...]], int, str]] = MappingProxyType(
    {
        "resnet50": (resnet50, 32, "224×224 image"),
        "vgg16": (vgg16, 32, "224×224 image"),
        "inception_v3": (inception_v3, 32, "299×299 image"),
        "bert_base": (bert_base, 32, "128-token sequence"),
        "transformer_base": (transformer_base, 64, "64+64-token sentence pair"),
        "gpt2_xl": (gpt2_xl, 4, "1,024-token sequence"),
    }
)
MODEL_NAMES: tuple[str, ...] = tuple(_BUILDERS)


def network(name: str) -> NetworkProfile:
    """The zoo entry ``name`` (one of :data:`MODEL_NAMES`); ValueError names the known ones."""
    if name not in _BUILDERS:
        raise ValueError(f"unknown model {name!r}; known models: {', '.join(MODEL_NAMES)}")
    build, batch, sample = _BUILDERS[name]
    return NetworkProfile(name, build(), batch, sample)
