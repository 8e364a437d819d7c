"""The similar-name index against brute-force definitions."""

from __future__ import annotations

import difflib
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.perf.duration.similarity import SimilarNames, best_matches, qgrams, similarity

# Helios-like names: a few stems with numeric variants, plus arbitrary short strings.
STEMS = ("train_resnet_lr", "train_resnet_bs", "eval_bert_", "test_vit", "ab")
names_st = st.one_of(
    st.builds(
        lambda s, v: s + v, st.sampled_from(STEMS), st.from_regex(r"[0-9.]{0,4}", fullmatch=True)
    ),
    st.text(alphabet="ab_01x", max_size=7),
)


def brute_qgrams(name: str, q: int) -> set[str]:
    if q == 1:
        return set(name)
    padded = "\x02" * (q - 1) + name + "\x03" * (q - 1)
    return {padded[i : i + q] for i in range(len(padded) - q + 1)}


def spec_similar(
    names: list[str], query: str, q: int, posting: int, candidates: int, variants: int
) -> tuple[str, ...]:
    """The documented lookup, by scanning every name for every gram and template."""
    if query in names:
        return (query,)
    counts: dict[int, int] = {}
    for gram in brute_qgrams(query, q):
        holding = [i for i, n in enumerate(names) if gram in brute_qgrams(n, q)]
        for i in holding[-posting:]:
            counts[i] = counts.get(i, 0) + 1
    chosen = set(sorted(counts, key=lambda i: (counts[i], i), reverse=True)[:candidates])
    template = re.sub(r"[0-9]+", "#", query)
    same = [i for i, n in enumerate(names) if re.sub(r"[0-9]+", "#", n) == template]
    chosen.update(same[-variants:] if variants else [])
    return tuple(difflib.get_close_matches(query, [names[i] for i in chosen], 2, 0.6))


def test_similarity_is_get_close_matches_ratio() -> None:
    assert similarity("abcde", "abcxy") == pytest.approx(0.6)
    assert difflib.get_close_matches("abcde", ["abcxy", "abxyz"], 2, 0.6) == ["abcxy"]
    assert similarity("train_resnet_lr0.1", "train_resnet_lr0.01") > 0.9


def test_threshold_is_inclusive_at_point_six() -> None:
    index = SimilarNames()
    for name in ("abcxy", "abxyz"):
        index.add(name)
    # ratio 2·3/10 = 0.6 passes; 2·2/10 = 0.4 does not.
    assert index.similar("abcde") == ("abcxy",)
    assert SimilarNames(cutoff=0.61).similar("abcde") == ()


def test_exact_name_is_the_only_answer() -> None:
    index = SimilarNames()
    for name in ("train_resnet_lr0.1", "train_resnet_lr0.01", "train_resnet_lr0.001"):
        index.add(name)
    assert index.similar("train_resnet_lr0.01") == ("train_resnet_lr0.01",)
    assert len(index.similar("train_resnet_lr0.05")) == 2


def test_qgrams_pad_short_names() -> None:
    assert qgrams("", 3) == frozenset({"\x02\x02\x03", "\x02\x03\x03"})
    assert qgrams("ab", 1) == frozenset({"a", "b"})
    with pytest.raises(ValueError):
        qgrams("a", 0)


@settings(max_examples=300, deadline=None)
@given(st.lists(names_st, max_size=25), names_st, st.integers(1, 3))
def test_best_matches_equals_get_close_matches(names: list[str], query: str, n: int) -> None:
    distinct = list(dict.fromkeys(names))
    expected = difflib.get_close_matches(query, distinct, n, 0.6)
    assert list(best_matches(query, distinct, n, 0.6)) == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(names_st, max_size=30), st.lists(names_st, min_size=1, max_size=10))
def test_unbounded_unigram_index_is_exact(added: list[str], queries: list[str]) -> None:
    index = SimilarNames(q=1, posting_limit=None, candidate_limit=None)
    for name in added:
        index.add(name)
    names = list(dict.fromkeys(added))
    for query in queries:
        expected = [query] if query in names else difflib.get_close_matches(query, names, 2, 0.6)
        assert list(index.similar(query)) == expected


@settings(max_examples=200, deadline=None)
@given(
    ops=st.lists(st.tuples(st.booleans(), names_st), max_size=40),
    q=st.integers(1, 3),
    posting=st.integers(1, 3),
    candidates=st.integers(1, 4),
    variants=st.integers(0, 2),
)
def test_bounded_index_equals_its_definition(
    ops: list[tuple[bool, str]], q: int, posting: int, candidates: int, variants: int
) -> None:
    # Interleaved adds and repeated queries also exercise the per-name answer cache.
    index = SimilarNames(
        q=q, posting_limit=posting, candidate_limit=candidates, variant_limit=variants
    )
    names: list[str] = []
    for is_add, name in ops:
        if is_add:
            assert index.add(name) == (name not in names)
            if name not in names:
                names.append(name)
        else:
            expected = spec_similar(names, name, q, posting, candidates, variants)
            assert index.similar(name) == expected


def test_lookup_cost_is_bounded() -> None:
    index = SimilarNames(posting_limit=8, candidate_limit=4, variant_limit=3)
    for i in range(5000):
        index.add(f"train_model{i % 50}_lr{i}")
    assert len(index.candidates("train_model7_lr123456")) <= 4 + 3
    assert len(index) == 5000


def test_numeric_variants_are_found_among_many_names() -> None:
    # Every gram of the query also occurs in recent names of other templates, which crowd the
    # bounded gram lists; the variant index still finds the older name of the same template.
    found = []
    for variant_limit in (0, 32):
        index = SimilarNames(variant_limit=variant_limit)
        index.add("train_lstm_cifar_wd5")
        for i in range(3000):
            for stem in ("train_lstm_coco_wd", "pretrain_lstm_cifar_bs", "train_unet_cifar_wd"):
                index.add(f"{stem}{i}")
        found.append(index.similar("train_lstm_cifar_wd77")[0])
    assert found[0].startswith("train_unet_cifar_wd")
    assert found[1] == "train_lstm_cifar_wd5"


def test_invalid_limits_raise() -> None:
    with pytest.raises(ValueError):
        SimilarNames(posting_limit=0)
    with pytest.raises(ValueError):
        SimilarNames(cutoff=1.5)
    with pytest.raises(ValueError):
        SimilarNames(max_matches=0)
