"""GPU demand of the Helios-like generator's job templates, and the job-weighted ranks that give
a template-level attribute a prescribed share among jobs."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from dlsched.trace.synth.bisect import bisect

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

GPU_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
_LOG_RATIO_RANGE = (-8.0, 4.0)


def job_weighted_ranks(u: FloatArray, counts: IntArray) -> FloatArray:
    """Each template's mid-rank in ``[0, 1]`` among all jobs when templates are ordered by ``u``.

    ``counts`` are the templates' job counts. Thresholding these ranks at p marks templates
    holding a share p of the jobs, so a template-level attribute gets a prescribed share among
    jobs however unevenly the jobs fall on templates.
    """
    order = np.argsort(u, kind="stable")
    total = max(int(counts.sum()), 1)
    cum = np.cumsum(counts[order]).astype(np.float64)
    ranks = np.empty(u.size, dtype=np.float64)
    ranks[order] = (cum - counts[order] / 2.0) / total
    return ranks


def job_level_ranks(u: FloatArray, template: IntArray) -> FloatArray:
    """Each job's rank in ``(0, 1)`` when jobs are ordered by their template's ``u``, then by
    their own order: a template's jobs take a contiguous band of width equal to its job share.

    Thresholding these ranks at p splits at most one template (the one straddling p), so the
    share below p moves job by job, not template by template.
    """
    order = np.lexsort((np.arange(template.size), u[template]))
    ranks = np.empty(template.size, dtype=np.float64)
    ranks[order] = (np.arange(template.size) + 0.5) / max(template.size, 1)
    return ranks


def largest_size_within(gpus: IntArray) -> IntArray:
    """The largest of :data:`GPU_SIZES` not above each of ``gpus`` (all >= 1)."""
    sizes = np.asarray(GPU_SIZES, dtype=np.int64)
    result: IntArray = sizes[np.searchsorted(sizes, gpus, side="right") - 1]
    return result


def gpu_sizes(ranks: FloatArray, cap: IntArray, ratio: float, one_share: float) -> IntArray:
    """GPU demand per template from its job-weighted rank, at most the template's ``cap`` (one
    of :data:`GPU_SIZES`).

    Ranks below ``one_share`` ask for 1 GPU. The others ask for 2**k GPUs (k >= 1) with
    probability proportional to ``ratio**k`` truncated at ``cap``: the quantile of that law at
    the rank's position within ``[one_share, 1)``. Truncating the law (rather than clamping the
    size) keeps a small VC from gathering every large request at its own size, and keeps the
    mean demand non-decreasing in ``ratio``.
    """
    k = np.arange(1, len(GPU_SIZES)).astype(np.float64)
    cum = np.cumsum(ratio**k)
    sizes = np.asarray(GPU_SIZES, dtype=np.int64)
    cap_index = np.searchsorted(sizes, cap)
    within = np.clip((ranks - one_share) / (1 - one_share), 0.0, 1.0)
    reach = cum[np.maximum(cap_index - 1, 0)]
    index = np.searchsorted(cum, within * reach, side="right") + 1
    index = np.where(ranks < one_share, 0, np.minimum(index, cap_index))
    result: IntArray = sizes[index]
    return result


def fit_gpu_ratio(
    ranks: FloatArray, cap: IntArray, counts: IntArray, target: float, one_share: float
) -> float:
    """The tail ratio of :func:`gpu_sizes` whose job-weighted mean demand is ``target`` (the
    mean is a step function of the ratio: the result sits at the step that crosses it)."""
    jobs = max(int(counts.sum()), 1)

    def excess(log_ratio: float) -> float:
        sizes = gpu_sizes(ranks, cap, math.exp(log_ratio), one_share)
        return float(np.dot(sizes, counts)) / jobs - target

    return math.exp(bisect(excess, *_LOG_RATIO_RANGE))
