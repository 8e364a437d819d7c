"""Model shapes and GPU figures for serving: parameters, KV-cache bytes per token, and how many
tokens of KV cache a tensor-parallel replica holds.

Shapes are the models' published configurations (Llama 2: Touvron et al., "Llama 2: Open
Foundation and Fine-Tuned Chat Models", 2023 — 80 layers, hidden 8192, 64 query heads with
grouped-query attention over 8 KV heads, SwiGLU FFN of 28,672, vocabulary 32,000; BLOOM:
BigScience, "BLOOM: A 176B-Parameter Open-Access Multilingual Language Model", 2022 — 70
layers, hidden 14,336, 112 heads, FFN 4x hidden, vocabulary 250,880, tied embeddings). GPU
peaks are NVIDIA's published dense fp16/bf16 figures (A100-80GB SXM: 312 TFLOP/s, 2.0 TB/s;
H100-80GB SXM: 989 TFLOP/s, 3.35 TB/s); memory is the 80 GiB the Splitwise measurements
assume. The power-capped H100 of those measurements has the H100's peaks: a cap lowers what
is reached, not the roof.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

BYTES_FP16 = 2
KV_BLOCK_TOKENS = 16
"""Tokens per paged KV block (vLLM's default block size; Kwon et al., SOSP'23)."""


@dataclass(frozen=True)
class ModelShape:
    """A decoder-only transformer's shape. ``gated_ffn``: a SwiGLU FFN (three matrices)
    rather than two; ``tied_embeddings``: input and output embeddings share one matrix.
    Parameters count the weight matrices and the embeddings; norms and biases are left out
    (under 0.1%)."""

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn_hidden: int
    vocab: int
    gated_ffn: bool
    tied_embeddings: bool = False
    bytes_per_value: int = BYTES_FP16

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def parameters(self) -> int:
        kv_width = self.kv_heads * self.head_dim
        attention = 2 * self.hidden * self.hidden + 2 * self.hidden * kv_width
        ffn = (3 if self.gated_ffn else 2) * self.hidden * self.ffn_hidden
        embeddings = (1 if self.tied_embeddings else 2) * self.vocab * self.hidden
        return self.layers * (attention + ffn) + embeddings

    @property
    def weight_bytes(self) -> int:
        return self.parameters * self.bytes_per_value

    @property
    def kv_bytes_per_token(self) -> int:
        """K and V of every layer: 2 x layers x KV heads x head dim x bytes per value."""
        return 2 * self.layers * self.kv_heads * self.head_dim * self.bytes_per_value

    def flops_per_token(self) -> float:
        """Matrix-multiply FLOPs of one token through the model, attention over the context
        excluded (2 FLOPs per parameter)."""
        return 2.0 * self.parameters

    def attention_flops_per_pair(self) -> float:
        """FLOPs of one (query token, context token) pair: QK^T and AV over all heads and
        layers, 2 FLOPs per multiply-add each."""
        return 4.0 * self.layers * self.hidden


@dataclass(frozen=True)
class GpuSpec:
    """A GPU's memory (bytes), peak dense fp16 FLOP/s and memory bandwidth (bytes/s)."""

    name: str
    memory_bytes: int
    peak_flops: float
    memory_bandwidth: float


GIB = 1 << 30
MODELS: MappingProxyType[str, ModelShape] = MappingProxyType(
    {
        "llama2-70b": ModelShape("llama2-70b", 80, 8192, 64, 8, 28672, 32000, gated_ffn=True),
        "bloom-176b": ModelShape(
            "bloom-176b", 70, 14336, 112, 112, 4 * 14336, 250880, False, tied_embeddings=True
        ),
    }
)
GPUS: MappingProxyType[str, GpuSpec] = MappingProxyType(
    {
        "a100-80gb": GpuSpec("a100-80gb", 80 * GIB, 312e12, 2.0e12),
        "h100-80gb": GpuSpec("h100-80gb", 80 * GIB, 989e12, 3.35e12),
        "h100-80gb-pcap": GpuSpec("h100-80gb-pcap", 80 * GIB, 989e12, 3.35e12),
    }
)


def model_shape(name: str) -> ModelShape:
    """The shape of model ``name``; ValueError naming the known ones."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; known models: {', '.join(MODELS)}")
    return MODELS[name]


def gpu_spec(name: str) -> GpuSpec:
    """The figures of GPU ``name``; ValueError naming the known ones."""
    if name not in GPUS:
        raise ValueError(f"unknown GPU {name!r}; known GPUs: {', '.join(GPUS)}")
    return GPUS[name]


def kv_capacity_tokens(
    model: ModelShape, gpu: GpuSpec, tp: int, memory_fraction: float = 0.9
) -> int:
    """Tokens of KV cache a replica of ``tp`` GPUs holds: ``memory_fraction`` of their memory
    less the weights, over the KV bytes per token (each GPU holds 1/tp of both). ValueError
    when the weights alone do not fit."""
    if tp < 1:
        raise ValueError(f"tensor-parallel degree must be at least 1, got {tp}")
    if not 0 < memory_fraction <= 1:
        raise ValueError(f"memory fraction must be in (0, 1], got {memory_fraction:g}")
    usable = tp * gpu.memory_bytes * memory_fraction - model.weight_bytes
    if usable < model.kv_bytes_per_token * KV_BLOCK_TOKENS:
        need = model.weight_bytes / (gpu.memory_bytes * memory_fraction)
        raise ValueError(
            f"{model.name} ({model.weight_bytes / 1e9:.0f} GB of weights) does not fit on "
            f"{tp} x {gpu.name}: needs more than {need:.1f} GPUs' memory"
        )
    return int(usable // model.kv_bytes_per_token)


def kv_blocks(model: str, gpu: str, tp: int, memory_fraction: float = 0.9) -> int:
    """Paged KV blocks (:data:`KV_BLOCK_TOKENS` tokens each) a replica of ``model`` on ``tp`` x
    ``gpu`` holds (:func:`kv_capacity_tokens`); ValueError for an unknown name or a model that
    does not fit."""
    tokens = kv_capacity_tokens(model_shape(model), gpu_spec(gpu), tp, memory_fraction)
    return tokens // KV_BLOCK_TOKENS


PCIE_BYTES_PER_S: MappingProxyType[str, float] = MappingProxyType(
    {"a100-80gb": 32e9, "h100-80gb": 64e9, "h100-80gb-pcap": 64e9}
)
"""Host link of one GPU, one direction: PCIe 4.0 x16 for the A100 and 5.0 x16 for the H100
(NVIDIA data sheets give 64 and 128 GB/s, both directions together)."""


def swap_seconds_per_token(model: str, gpu: str, tp: int, link_bytes_per_s: float | None) -> float:
    """Seconds to copy one token's KV cache between a replica's GPUs and host memory: each of
    the ``tp`` GPUs moves its 1/tp share over its own link (``link_bytes_per_s``; default
    :data:`PCIE_BYTES_PER_S` of ``gpu``)."""
    link = PCIE_BYTES_PER_S[gpu_spec(gpu).name] if link_bytes_per_s is None else link_bytes_per_s
    if not link > 0:
        raise ValueError(f"the host link must be positive, got {link:g} B/s")
    return model_shape(model).kv_bytes_per_token / (tp * link)
