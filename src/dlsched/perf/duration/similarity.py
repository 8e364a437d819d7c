"""Similar job names: the string measure and an incremental index that finds similar names
without scanning every known name.

**Measure.** ``similarity(query, name)`` is :class:`difflib.SequenceMatcher` ``ratio()``
(Ratcliff/Obershelp: twice the characters in matching blocks over the total length), computed
exactly as :func:`difflib.get_close_matches` does (``name`` as the first sequence, ``query`` as
the second). It is the measure of the Helios artifact's history estimator (``get_close_matches``
with cutoff 0.6, two matches), so the 0.6 threshold of seeds.md 1.3 means what it meant there,
and it needs nothing outside the standard library. Ratios are in [0, 1]; 1 means equal strings.

**Lookup** (:meth:`SimilarNames.similar`), for a query name:

1. A known name equal to the query is the only answer (it is the unique best match, ratio 1;
   the artifact then uses that name alone).
2. Otherwise candidates come from two inverted indexes, both keeping only recent names:

   * numeric variants: the ``variant_limit`` most recently added names with the query's
     :func:`digit_template` (digit runs replaced by ``#``: ``train_resnet_lr0.05`` finds
     ``train_resnet_lr0.1`` and ``train_resnet_lr0.001``), the usual way job names recur;
   * q-grams (q = 3 by default; names are padded with boundary marks so short names have
     grams): each gram keeps a posting list of the ``posting_limit`` most recently added names
     containing it. A name's score is the number of the query's distinct grams whose list holds
     it; the ``candidate_limit`` best-scoring names (ties: most recently added first) join.
3. The answer is the up-to-``max_matches`` candidates with ``similarity >= cutoff``, best
   first (ties: the greater string first, as ``get_close_matches`` orders them).

With ``q=1`` and no limits (``None``), step 2 keeps every name sharing a character with the
query, a superset of all names with a positive ratio, so the answer equals
``get_close_matches`` over all known names. The bounded defaults make a lookup cost
O(q-grams × posting_limit + candidate_limit + variant_limit) whatever the number of names.
The price is recall: a name with ratio ≥ 0.6 that is neither a recent numeric variant nor among
the best-scoring recent q-gram neighbours is missed, so with many names the answer can be a
slightly less similar name than a full scan would return (on 162,000 synthetic names: the same
template, ratio within a few hundredths, see the report of ``bench/predictor_throughput.py``).

Answers are cached per query name and reused while none of the query's posting lists has
changed (each list has a version counter), so repeated queries cost one dictionary pass.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter, OrderedDict, deque
from collections.abc import Iterable, Iterator
from difflib import SequenceMatcher
from itertools import chain
from operator import itemgetter

START, END = "\x02", "\x03"
_DIGITS = re.compile(r"\d+")


def similarity(query: str, name: str) -> float:
    """SequenceMatcher ratio of ``name`` (first sequence) against ``query`` (second)."""
    return SequenceMatcher(None, name, query).ratio()


def digit_template(name: str) -> str:
    """``name`` with every run of digits replaced by ``#``."""
    return _DIGITS.sub("#", name)


def qgrams(name: str, q: int) -> frozenset[str]:
    """The distinct q-grams of ``name``; for q > 1 the name is padded with q-1 boundary marks
    on each side, so every name, even the empty one, has at least one gram."""
    if q < 1:
        raise ValueError(f"q must be >= 1, got {q}")
    if q == 1:
        return frozenset(name)
    padded = START * (q - 1) + name + END * (q - 1)
    return frozenset(padded[i : i + q] for i in range(len(padded) - q + 1))


def best_matches(
    query: str, candidates: list[str], max_matches: int, cutoff: float
) -> tuple[str, ...]:
    """The up-to-``max_matches`` candidates with ratio >= ``cutoff``, best first, ties broken
    by the greater string (the selection and order of :func:`difflib.get_close_matches`).

    Exact, but computes fewer full ratios: candidates are tried in decreasing order of the
    ``quick_ratio`` upper bound, and the search stops once that bound falls below the worst of
    ``max_matches`` ratios already found.
    """
    matcher = SequenceMatcher()
    matcher.set_seq2(query)
    bounded: list[tuple[float, str]] = []
    for name in candidates:
        matcher.set_seq1(name)
        if matcher.real_quick_ratio() >= cutoff:
            bound = matcher.quick_ratio()
            if bound >= cutoff:
                bounded.append((bound, name))
    bounded.sort(reverse=True)
    best: list[tuple[float, str]] = []  # a min-heap of the best (ratio, name) so far
    for bound, name in bounded:
        if len(best) == max_matches and bound < best[0][0]:
            break
        matcher.set_seq1(name)
        ratio = matcher.ratio()
        if ratio >= cutoff:
            if len(best) < max_matches:
                heapq.heappush(best, (ratio, name))
            elif (ratio, name) > best[0]:
                heapq.heapreplace(best, (ratio, name))
    return tuple(name for _, name in sorted(best, reverse=True))


class SimilarNames:
    """A growing set of distinct names that answers similar-name queries (module docstring).

    ``add`` is O(length of the name); ``similar`` is bounded by the limits, not by the number of
    names. A limit of ``None`` means unbounded; ``variant_limit=0`` disables the variant index.
    """

    def __init__(
        self,
        q: int = 3,
        posting_limit: int | None = 32,
        candidate_limit: int | None = 16,
        variant_limit: int | None = 32,
        cutoff: float = 0.6,
        max_matches: int = 2,
        cache_size: int = 65536,
    ) -> None:
        limits = {"posting_limit": posting_limit, "candidate_limit": candidate_limit}
        for label, limit in limits.items():
            if limit is not None and limit < 1:
                raise ValueError(f"{label} must be >= 1 or None, got {limit}")
        if variant_limit is not None and variant_limit < 0:
            raise ValueError(f"variant_limit must be >= 0 or None, got {variant_limit}")
        if not 0.0 <= cutoff <= 1.0:
            raise ValueError(f"cutoff must be in [0, 1], got {cutoff}")
        if max_matches < 1:
            raise ValueError(f"max_matches must be >= 1, got {max_matches}")
        qgrams("", q)  # validates q
        self.q = q
        self.posting_limit = posting_limit
        self.candidate_limit = candidate_limit
        self.variant_limit = variant_limit
        self.cutoff = cutoff
        self.max_matches = max_matches
        self.cache_size = cache_size
        self._ids: dict[str, int] = {}
        self._names: list[str] = []
        self._postings: dict[str, deque[int]] = {}
        self._variants: dict[str, deque[int]] = {}
        # Versions count appends to each posting list (grams and templates apart).
        self._versions: dict[str, int] = {}
        self._variant_versions: dict[str, int] = {}
        # query -> (its grams, its template, the versions' sum when answered, the answer)
        self._cache: OrderedDict[str, tuple[frozenset[str], str, int, tuple[str, ...]]] = (
            OrderedDict()
        )

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._ids

    def __iter__(self) -> Iterator[str]:
        """The known names, in the order they were added."""
        return iter(self._names)

    def add(self, name: str) -> bool:
        """Add ``name`` if new (returns whether it was); known names are ignored."""
        if name in self._ids:
            return False
        new_id = len(self._names)
        self._ids[name] = new_id
        self._names.append(name)
        _append(self._postings, self._versions, qgrams(name, self.q), new_id, self.posting_limit)
        if self.variant_limit != 0:
            template = (digit_template(name),)
            _append(self._variants, self._variant_versions, template, new_id, self.variant_limit)
        return True

    def similar(self, query: str) -> tuple[str, ...]:
        """The known names similar to ``query``, best first (empty if none reaches the cutoff)."""
        if query in self._ids:
            return (query,)
        cached = self._cache.get(query)
        if cached is not None:
            grams, template, stamp, answer = cached
            if self._stamp(grams, template) == stamp:
                self._cache.move_to_end(query)
                return answer
        else:
            grams, template = qgrams(query, self.q), digit_template(query)
        candidates = self._candidates(grams, template)
        answer = best_matches(query, candidates, self.max_matches, self.cutoff)
        self._cache[query] = (grams, template, self._stamp(grams, template), answer)
        self._cache.move_to_end(query)
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return answer

    def candidates(self, query: str) -> list[str]:
        """The candidate names step 2 of the lookup scores for ``query`` (for inspection)."""
        return self._candidates(qgrams(query, self.q), digit_template(query))

    def _stamp(self, grams: frozenset[str], template: str) -> int:
        # Versions only grow, so an unchanged sum means no posting list changed.
        versions = self._versions
        return sum(versions.get(g, 0) for g in grams) + self._variant_versions.get(template, 0)

    def _candidates(self, grams: frozenset[str], template: str) -> list[str]:
        postings = self._postings
        counts = Counter(chain.from_iterable(postings.get(g, ()) for g in grams))
        limit = self.candidate_limit
        if limit is None or len(counts) <= limit:
            chosen = set(counts)
        else:
            top = heapq.nlargest(limit, counts.items(), key=itemgetter(1, 0))
            chosen = {name_id for name_id, _ in top}
        chosen.update(self._variants.get(template, ()))
        names = self._names
        return [names[i] for i in chosen]


def _append(
    postings: dict[str, deque[int]],
    versions: dict[str, int],
    keys: Iterable[str],
    name_id: int,
    limit: int | None,
) -> None:
    for key in keys:
        posting = postings.get(key)
        if posting is None:
            posting = postings[key] = deque(maxlen=limit)
        posting.append(name_id)
        versions[key] = versions.get(key, 0) + 1
