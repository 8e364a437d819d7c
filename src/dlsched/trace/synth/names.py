"""Job names for the Helios-like generator: ``{project}_{model}_{variant}``.

The public Helios logs omit job names, so the vocabulary is ours: short DL project and model
tags, and variant tags of the kinds users put in names when they sweep hyper-parameters or
retry (``lr0.01``, ``bs256``, ``trial17``, ...). Debug templates get ``debug``/``test`` variants.
A template fixes project, model and variant kind; its k-th variant (k = 0, 1, ...) fixes the tag.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

PROJECTS = (
    "det", "seg", "cls", "reid", "pose", "ocr", "face", "track", "nas", "gan",
    "sr", "depth", "asr", "nlp", "video", "lane", "mot", "kd", "quant", "prune",
)  # fmt: skip
MODELS = (
    "r18", "r50", "r101", "x101", "mbv2", "mbv3", "effb0", "effb3", "vitb16", "swint",
    "hrnet32", "yolov3", "fcos", "retina", "frcnn", "mrcnn", "unet", "deeplab", "bert",
    "gpt2", "lstm", "pointnet", "dla34", "regnet",
)  # fmt: skip
_TRAIN_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("lr", ("0.1", "0.05", "0.01", "0.005", "0.001", "0.0005", "0.0001")),
    ("bs", ("64", "128", "256", "512", "32", "1024")),
    ("wd", ("1e-4", "5e-4", "1e-5", "5e-5")),
    ("ep", ("12", "24", "36", "50", "100", "200", "300")),
    ("trial", ()),
    ("v", ()),
    ("seed", ()),
)
_DEBUG_KINDS = ("debug", "test")
PROJECTS_PER_USER = 3


def variant_tag(kind: int, rank: int, debug: bool) -> str:
    """The tag of a template's ``rank``-th variant for variant kind number ``kind``.

    Listed values are used in order, then repeated with a ``_2``, ``_3``, ... suffix; open kinds
    (``trial``, ``v``, ``seed``) count. Debug tags are ``debug``, ``debug2``, ...
    """
    if debug:
        base = _DEBUG_KINDS[kind % len(_DEBUG_KINDS)]
        return base if rank == 0 else f"{base}{rank + 1}"
    prefix, values = _TRAIN_KINDS[kind % len(_TRAIN_KINDS)]
    if not values:
        return f"{prefix}{rank + 1}"
    value = values[rank % len(values)]
    cycle = rank // len(values)
    return f"{prefix}{value}" if cycle == 0 else f"{prefix}{value}_{cycle + 1}"


def template_stems(
    template_user: npt.NDArray[np.int64], n_users: int, rng: np.random.Generator
) -> tuple[list[str], npt.NDArray[np.int64]]:
    """Per template: its ``{project}_{model}`` stem and a variant-kind number.

    Each user works on up to :data:`PROJECTS_PER_USER` projects; a template takes one of its
    user's projects and any model.
    """
    user_projects = rng.integers(0, len(PROJECTS), size=(n_users, PROJECTS_PER_USER))
    pick = rng.integers(0, PROJECTS_PER_USER, size=template_user.size)
    project = user_projects[template_user, pick]
    model = rng.integers(0, len(MODELS), size=template_user.size)
    kind = rng.integers(0, len(_TRAIN_KINDS) * len(_DEBUG_KINDS), size=template_user.size)
    stems = [f"{PROJECTS[p]}_{MODELS[m]}" for p, m in zip(project, model, strict=True)]
    return stems, kind.astype(np.int64)


def job_names(
    stems: list[str],
    kinds: npt.NDArray[np.int64],
    debug: npt.NDArray[np.bool_],
    variant_template: npt.NDArray[np.int64],
    variant_rank: npt.NDArray[np.int64],
    job_variant: npt.NDArray[np.int64],
) -> list[str]:
    """The name of every job: its template's stem and its variant's tag."""
    variant_names = [
        f"{stems[t]}_{variant_tag(int(kinds[t]), int(r), bool(debug[t]))}"
        for t, r in zip(variant_template, variant_rank, strict=True)
    ]
    return [variant_names[v] for v in job_variant]
