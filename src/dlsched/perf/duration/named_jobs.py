"""Synthetic Helios-like jobs with users and recurring names, for testing and benchmarking the
duration estimators (the full trace generator is ``dlsched trace synth``; this one only shapes
what the estimators read: who submits, what the job is called, and how long it runs).

Model, all drawn from ``seed``:

* Name templates ``<action>_<model>_<dataset>_<knob>`` (e.g. ``train_resnet50_imagenet_lr``),
  each with a base log duration (action + model + dataset effects + noise) and a typical GPU
  count. There are ``2 × users`` templates, shared between users.
* Users have Zipf-like activity (the user of rank r submits ∝ 1/r^1.1), a VC, a duration
  effect, and 1–6 templates they use.
* A job picks one of its user's templates and a knob value: one of the template's 8 common
  values (names recur exactly: ``train_resnet50_imagenet_lr0.01``), or with probability
  ``novel_name_share`` a random number (a new variant of a known template). Common values shift
  the duration a little, by their rank.
* GPUs: the template's typical count, or 20% of the time another of 1, 2, 4, 8; CPUs 4 per GPU.
* Duration: exp(template + user + variant effects + N(0, ``noise``)), clipped to [10 s, 30 days].
* Submissions: a Poisson process at ``rate`` jobs/s from 2020-09-01 00:00 UTC.
"""

from __future__ import annotations

import numpy as np

from dlsched.trace.schema import Trace

ACTIONS = (("train", 1.0), ("eval", -1.5), ("test", -2.0), ("finetune", 0.3), ("pretrain", 2.0))
MODELS = (
    ("resnet50", 0.5),
    ("resnet18", -0.3),
    ("bert_base", 0.6),
    ("bert_large", 1.2),
    ("vit_b16", 0.8),
    ("gpt2", 1.0),
    ("yolov5", 0.2),
    ("unet", -0.2),
    ("lstm", -0.8),
    ("mobilenet_v2", -0.5),
    ("efficientnet_b0", 0.0),
    ("maskrcnn", 0.7),
)
DATASETS = (
    ("imagenet", 1.0),
    ("cifar10", -1.0),
    ("coco", 0.6),
    ("wiki", 0.8),
    ("squad", -0.4),
    ("mnist", -1.5),
    ("cityscapes", 0.3),
)
KNOBS: dict[str, tuple[str, ...]] = {
    "lr": ("0.1", "0.05", "0.01", "0.005", "0.001", "0.0005", "0.0001", "3e-05"),
    "bs": ("16", "32", "64", "128", "256", "512", "1024", "2048"),
    "wd": ("0", "1e-05", "5e-05", "0.0001", "0.0005", "0.001", "0.005", "0.01"),
    "seed": ("0", "1", "2", "3", "42", "123", "2020", "777"),
    "ep": ("1", "5", "10", "20", "50", "90", "100", "300"),
}
GPU_CHOICES = (1, 2, 4, 8, 16)
ORIGIN_UNIX = 1598918400.0  # 2020-09-01 00:00 UTC


def named_trace(
    n_jobs: int,
    n_users: int = 2000,
    seed: int = 0,
    novel_name_share: float = 0.15,
    noise: float = 0.4,
    rate: float = 0.1,
    n_vcs: int = 10,
) -> Trace:
    """A trace of ``n_jobs`` jobs with users, names, VCs, GPUs, CPUs and durations."""
    rng = np.random.default_rng(seed)
    knob_names = list(KNOBS)
    n_templates = max(2 * n_users, 1)
    act = rng.integers(len(ACTIONS), size=n_templates)
    mod = rng.integers(len(MODELS), size=n_templates)
    dat = rng.integers(len(DATASETS), size=n_templates)
    knob = rng.integers(len(knob_names), size=n_templates)
    prefixes = [
        f"{ACTIONS[a][0]}_{MODELS[m][0]}_{DATASETS[d][0]}_{knob_names[k]}"
        for a, m, d, k in zip(act.tolist(), mod.tolist(), dat.tolist(), knob.tolist(), strict=True)
    ]
    effects = np.array([e for _, e in ACTIONS])[act] + np.array([e for _, e in MODELS])[mod]
    base = 7.0 + effects + np.array([e for _, e in DATASETS])[dat] + rng.normal(0, 0.5, n_templates)
    typical_gpus = rng.choice(GPU_CHOICES, size=n_templates, p=[0.55, 0.15, 0.12, 0.13, 0.05])

    per_user = rng.integers(1, 7, size=n_users)
    user_templates = rng.integers(n_templates, size=(n_users, 6))
    user_effect = rng.normal(0, 0.5, n_users)
    user_vc = rng.integers(n_vcs, size=n_users)
    activity = 1.0 / np.arange(1, n_users + 1) ** 1.1
    activity = rng.permutation(activity / activity.sum())

    user = rng.choice(n_users, size=n_jobs, p=activity)
    slot = (rng.random(n_jobs) * per_user[user]).astype(np.int64)
    template = user_templates[user, slot]
    common = rng.integers(8, size=n_jobs)
    novel = rng.random(n_jobs) < novel_name_share
    novel_value = rng.integers(100000, size=n_jobs)
    variant_effect = np.where(novel, 0.0, (common - 3.5) * 0.08)
    gpus = np.where(
        rng.random(n_jobs) < 0.8, typical_gpus[template], rng.choice((1, 2, 4, 8), size=n_jobs)
    )
    log_d = base[template] + user_effect[user] + variant_effect + rng.normal(0, noise, n_jobs)
    duration = np.clip(np.round(np.exp(log_d)), 10.0, 30 * 86400.0)
    submit = np.cumsum(rng.exponential(1.0 / rate, size=n_jobs)) if n_jobs else np.empty(0)

    knob_values = [KNOBS[k] for k in knob_names]
    knob_of = knob.tolist()
    names = [
        f"{prefixes[t]}{v if is_new else knob_values[knob_of[t]][c]}"
        for t, c, is_new, v in zip(
            template.tolist(), common.tolist(), novel.tolist(), novel_value.tolist(), strict=True
        )
    ]
    return Trace.from_columns(
        {
            "job_id": [str(i) for i in range(n_jobs)],
            "submit_time": np.floor(submit),
            "num_gpus": gpus.astype(np.int32),
            "duration": duration,
            "user": [f"user{u:04d}" for u in user.tolist()],
            "vc": [f"vc{v}" for v in user_vc[user].tolist()],
            "job_name": names,
            "num_cpus": (gpus * 4).astype(float),
            "state": ["COMPLETED"] * n_jobs,
        },
        source=f"named-jobs:{n_jobs}:seed{seed}",
        origin_unix=ORIGIN_UNIX,
    )
