"""Per-layer records of a network and a builder that derives them from layer shapes.

A :class:`Layer` is one parameterized unit (a convolution, a normalization, a linear map, an
embedding table, or an attention block's matrix products). Its parameter count and forward
FLOPs per sample are computed from the layer's shape, never typed in. FLOPs count a
multiply-accumulate as two operations.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Layer:
    """One layer: ``params`` weights, ``flops`` forward FLOPs per sample, ``activations``
    output elements per sample (what the backward pass keeps in memory)."""

    name: str
    params: int
    flops: float
    activations: int


@dataclass(frozen=True, slots=True)
class Shape:
    """A feature map: channels × height × width (per sample)."""

    c: int
    h: int
    w: int

    @property
    def size(self) -> int:
        return self.c * self.h * self.w


def _out(size: int, kernel: int, stride: int, pad: int) -> int:
    out = (size + 2 * pad - kernel) // stride + 1
    if out < 1:
        raise ValueError(f"kernel {kernel} stride {stride} pad {pad} does not fit size {size}")
    return out


@dataclass
class LayerList:
    """Accumulates layers in forward order; every method returns the output shape."""

    layers: list[Layer] = field(default_factory=list)

    def conv(
        self,
        name: str,
        x: Shape,
        out_c: int,
        kernel: int | tuple[int, int],
        stride: int = 1,
        pad: int | tuple[int, int] = 0,
        bias: bool = False,
    ) -> Shape:
        """A 2-D convolution (groups = 1)."""
        kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
        ph, pw = (pad, pad) if isinstance(pad, int) else pad
        y = Shape(out_c, _out(x.h, kh, stride, ph), _out(x.w, kw, stride, pw))
        params = x.c * out_c * kh * kw + (out_c if bias else 0)
        flops = 2.0 * x.c * kh * kw * y.size
        self.layers.append(Layer(name, params, flops, y.size))
        return y

    def batchnorm(self, name: str, x: Shape) -> Shape:
        """Batch normalization with a learned scale and shift per channel."""
        self.layers.append(Layer(name, 2 * x.c, 2.0 * x.size, x.size))
        return x

    def conv_bn(
        self,
        name: str,
        x: Shape,
        out_c: int,
        kernel: int | tuple[int, int],
        stride: int = 1,
        pad: int | tuple[int, int] = 0,
    ) -> Shape:
        """A bias-free convolution followed by batch normalization."""
        y = self.conv(f"{name}.conv", x, out_c, kernel, stride, pad)
        return self.batchnorm(f"{name}.bn", y)

    def linear(self, name: str, d_in: int, d_out: int, tokens: int = 1, bias: bool = True) -> int:
        """A dense layer applied to ``tokens`` positions per sample; returns ``d_out``."""
        params = d_in * d_out + (d_out if bias else 0)
        self.layers.append(Layer(name, params, 2.0 * d_in * d_out * tokens, d_out * tokens))
        return d_out

    def layernorm(self, name: str, d: int, tokens: int) -> int:
        self.layers.append(Layer(name, 2 * d, 5.0 * d * tokens, d * tokens))
        return d

    def embedding(self, name: str, rows: int, d: int, tokens: int) -> int:
        """A lookup table: parameters but (almost) no arithmetic."""
        self.layers.append(Layer(name, rows * d, float(d * tokens), d * tokens))
        return d

    def attention_scores(self, name: str, d: int, heads: int, q_len: int, k_len: int) -> None:
        """Q·Kᵀ and the weighted sum of V: no parameters, ``4·q·k·d`` FLOPs."""
        self.layers.append(
            Layer(name, 0, 4.0 * q_len * k_len * d, heads * q_len * k_len + q_len * d)
        )


def pool(x: Shape, kernel: int, stride: int, pad: int = 0) -> Shape:
    """The output shape of a max or average pooling (no parameters, FLOPs neglected)."""
    return Shape(x.c, _out(x.h, kernel, stride, pad), _out(x.w, kernel, stride, pad))


def concat(*shapes: Shape) -> Shape:
    """Channel-wise concatenation of same-sized maps."""
    sizes = {(s.h, s.w) for s in shapes}
    if len(sizes) != 1:
        raise ValueError(f"cannot concatenate maps of sizes {sorted(sizes)}")
    return Shape(sum(s.c for s in shapes), shapes[0].h, shapes[0].w)
