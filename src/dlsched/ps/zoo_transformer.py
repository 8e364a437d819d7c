"""Transformer networks of the zoo, built block by block from their published sizes.

- BERT-base: Devlin et al., NAACL 2019 (12 layers, hidden 768, 12 heads, feed-forward 3072,
  vocabulary 30,522, 512 positions, 2 segment types, with the pooler).
- Transformer (base): Vaswani et al., "Attention Is All You Need", NeurIPS 2017 (6 + 6 layers,
  d_model 512, 8 heads, feed-forward 2048, one 37,000-token embedding shared by source, target
  and the output projection; final layer norms on both stacks).
- GPT-2 XL: Radford et al., 2019 (48 layers, d 1,600, 25 heads, vocabulary 50,257, 1,024
  positions; output projection tied to the token embedding).
"""

from __future__ import annotations

from dlsched.ps.layers import Layer, LayerList


def bert_base(seq_len: int = 128) -> tuple[Layer, ...]:
    """BERT-base encoder with pooler for sequences of ``seq_len`` tokens (~110M parameters)."""
    net = LayerList()
    d = 768
    net.embedding("embeddings.word", 30_522, d, seq_len)
    net.embedding("embeddings.position", 512, d, seq_len)
    net.embedding("embeddings.token_type", 2, d, seq_len)
    net.layernorm("embeddings.norm", d, seq_len)
    for i in range(12):
        _encoder_layer(net, f"layer{i}", d, 12, 3072, seq_len)
    net.linear("pooler", d, d)
    return tuple(net.layers)


def transformer_base(src_len: int = 64, tgt_len: int = 64) -> tuple[Layer, ...]:
    """Transformer (base) for one sentence pair of ``src_len`` and ``tgt_len`` tokens
    (~63M parameters with the shared embedding)."""
    net = LayerList()
    d, heads, ff = 512, 8, 2048
    net.embedding("embedding", 37_000, d, src_len + tgt_len)
    for i in range(6):
        _encoder_layer(net, f"encoder{i}", d, heads, ff, src_len)
    net.layernorm("encoder.norm", d, src_len)
    for i in range(6):
        _attention(net, f"decoder{i}.self", d, heads, tgt_len, tgt_len)
        net.layernorm(f"decoder{i}.norm1", d, tgt_len)
        _attention(net, f"decoder{i}.cross", d, heads, tgt_len, src_len)
        net.layernorm(f"decoder{i}.norm2", d, tgt_len)
        _feed_forward(net, f"decoder{i}", d, ff, tgt_len)
        net.layernorm(f"decoder{i}.norm3", d, tgt_len)
    net.layernorm("decoder.norm", d, tgt_len)
    # The output projection reuses the embedding matrix: FLOPs only.
    net.layers.append(Layer("generator", 0, 2.0 * d * 37_000 * tgt_len, 37_000 * tgt_len))
    return tuple(net.layers)


def gpt2_xl(seq_len: int = 1024) -> tuple[Layer, ...]:
    """GPT-2 XL decoder for sequences of ``seq_len`` tokens (~1.56B parameters)."""
    net = LayerList()
    d, vocab = 1600, 50_257
    net.embedding("wte", vocab, d, seq_len)
    net.embedding("wpe", 1024, d, seq_len)
    for i in range(48):
        net.layernorm(f"h{i}.ln1", d, seq_len)
        net.linear(f"h{i}.qkv", d, 3 * d, seq_len)
        net.attention_scores(f"h{i}.scores", d, 25, seq_len, seq_len)
        net.linear(f"h{i}.proj", d, d, seq_len)
        net.layernorm(f"h{i}.ln2", d, seq_len)
        net.linear(f"h{i}.fc", d, 4 * d, seq_len)
        net.linear(f"h{i}.fc_proj", 4 * d, d, seq_len)
    net.layernorm("ln_f", d, seq_len)
    net.layers.append(Layer("lm_head", 0, 2.0 * d * vocab * seq_len, vocab * seq_len))
    return tuple(net.layers)


def _encoder_layer(net: LayerList, name: str, d: int, heads: int, ff: int, tokens: int) -> None:
    _attention(net, f"{name}.attn", d, heads, tokens, tokens)
    net.layernorm(f"{name}.norm1", d, tokens)
    _feed_forward(net, name, d, ff, tokens)
    net.layernorm(f"{name}.norm2", d, tokens)


def _attention(net: LayerList, name: str, d: int, heads: int, q_len: int, k_len: int) -> None:
    net.linear(f"{name}.q", d, d, q_len)
    net.linear(f"{name}.k", d, d, k_len)
    net.linear(f"{name}.v", d, d, k_len)
    net.attention_scores(f"{name}.scores", d, heads, q_len, k_len)
    net.linear(f"{name}.out", d, d, q_len)


def _feed_forward(net: LayerList, name: str, d: int, ff: int, tokens: int) -> None:
    net.linear(f"{name}.ff1", d, ff, tokens)
    net.linear(f"{name}.ff2", ff, d, tokens)
