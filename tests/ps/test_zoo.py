"""The zoo's parameter counts and FLOPs, computed from layer shapes, match the well-known ones."""

from __future__ import annotations

import pytest

from dlsched.ps.zoo import MODEL_NAMES, network

# Parameter counts of the reference ImageNet / Hugging Face implementations.
KNOWN_PARAMS = {
    "resnet50": 25_557_032,
    "vgg16": 138_357_544,
    "inception_v3": 23_834_568,  # without the auxiliary classifier
    "bert_base": 109_482_240,  # BertModel with pooler
}
# Forward multiply-accumulates per sample, as commonly reported (GMACs).
KNOWN_GMACS = {"resnet50": 4.1, "vgg16": 15.5, "inception_v3": 5.7}


@pytest.mark.parametrize(("name", "params"), sorted(KNOWN_PARAMS.items()))
def test_parameter_counts_match_reference_models(name: str, params: int) -> None:
    assert network(name).params == params


def test_transformer_base_and_gpt2_sizes() -> None:
    # Vaswani et al. report ~65M for the base model; ours has the 37k shared embedding.
    assert 60e6 < network("transformer_base").params < 66e6
    assert 1.5e9 < network("gpt2_xl").params < 1.6e9


@pytest.mark.parametrize(("name", "gmacs"), sorted(KNOWN_GMACS.items()))
def test_forward_flops_match_published_macs(name: str, gmacs: float) -> None:
    assert network(name).flops / 2e9 == pytest.approx(gmacs, rel=0.03)


def test_every_layer_is_derived_and_named() -> None:
    for name in MODEL_NAMES:
        net = network(name)
        assert len({layer.name for layer in net.layers}) == len(net.layers)
        assert all(layer.params >= 0 and layer.flops >= 0 for layer in net.layers)
        assert net.params == sum(layer.params for layer in net.layers)


def test_unknown_model_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="resnet50"):
        network("alexnet")


def _count(module: object) -> int:
    return sum(p.numel() for p in module.parameters())  # type: ignore[attr-defined]


@pytest.mark.slow  # importing torch takes seconds
def test_counts_match_torchvision_models() -> None:
    models = pytest.importorskip("torchvision.models")
    assert _count(models.resnet50()) == network("resnet50").params
    assert _count(models.vgg16()) == network("vgg16").params
    inception = models.inception_v3(aux_logits=False, init_weights=False)
    assert _count(inception) == network("inception_v3").params


@pytest.mark.slow  # importing torch takes seconds
def test_transformer_matches_torch_transformer() -> None:
    torch = pytest.importorskip("torch")
    core = torch.nn.Transformer(d_model=512, nhead=8, dim_feedforward=2048)
    assert _count(core) + 37_000 * 512 == network("transformer_base").params
