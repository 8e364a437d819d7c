"""A small, realistic trace in the Helios ``cluster_log.csv`` format, for the analysis tests.

No real Helios job log is available here, so this writes one with the features the
characterization reads: users of very unequal activity, job names that recur per user, the five
Slurm final states (cancelled jobs sometimes never start), CPU jobs beside GPU jobs of 1..64 GPUs,
run times spanning seconds to days, queueing that grows with GPU demand, a daily and weekly
submission rhythm, and users spread over a few VCs. The shape follows what the Helios study
reports qualitatively (Hu et al., SC'21: mostly short jobs, most GPU-time in large jobs, a few
users holding most GPU-time, jobs that recur); the numbers are invented, not calibrated.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

COLUMNS = (
    "job_id",
    "user",
    "vc",
    "jobname",
    "gpu_num",
    "cpu_num",
    "node_num",
    "state",
    "submit_time",
    "start_time",
    "end_time",
    "duration",
    "queue",
)
START = datetime(2020, 4, 6, tzinfo=UTC)  # a Monday, within the Helios trace period
STATES = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL")
STATE_WEIGHTS = (0.60, 0.24, 0.14, 0.01, 0.01)
GPU_CHOICES = (1, 2, 4, 8, 16, 32, 64)
GPU_WEIGHTS = (0.55, 0.12, 0.12, 0.13, 0.05, 0.02, 0.01)
MODELS = ("resnet50", "bert_base", "mask_rcnn", "gpt_small", "vit_b16", "deeplab", "yolo", "lstm")
DATASETS = ("imagenet", "coco", "wiki", "cityscapes", "librispeech")
# Busier in the working day (UTC+8, Helios's time zone), quieter at night and at weekends.
HOUR_WEIGHTS = np.array([3, 4, 5, 6, 6, 6, 5, 4, 5, 6, 7, 6, 5, 4, 3, 2, 1, 1, 1, 1, 1, 1, 2, 2.0])
WEEKEND_FACTOR = 0.55


@dataclass(frozen=True)
class HeliosTrace:
    """What was written: the path and the counts a report on it must show (``gpu_users``:
    users with at least one GPU job that ran)."""

    path: Path
    jobs: int
    gpu_jobs: int
    users: int
    gpu_users: int


def write_helios_csv(
    path: Path, jobs: int = 3000, days: int = 14, users: int = 60, seed: int = 0
) -> HeliosTrace:
    """Write ``jobs`` Helios-format rows over ``days`` days to ``path`` (sorted by submit)."""
    rng = np.random.default_rng(seed)
    vcs = [
        f"vc{''.join(rng.choice(list('ABCDEFGHJKLMNPQRSTUVWXYZ0123456789'), 3))}" for _ in range(8)
    ]
    activity = 1.0 / np.arange(1, users + 1) ** 1.2
    activity /= activity.sum()
    home_vc = rng.integers(0, len(vcs), users)
    favourite_gpus = rng.choice(len(GPU_CHOICES), users, p=GPU_WEIGHTS)
    names = [
        [f"{rng.choice(MODELS)}_{rng.choice(DATASETS)}" for _ in range(rng.integers(1, 7))]
        for _ in range(users)
    ]
    rows = []
    for _ in range(jobs):
        u = int(rng.choice(users, p=activity))
        submit = _submit_offset(rng, days)
        gpus = _gpus(rng, int(favourite_gpus[u]))
        state = str(rng.choice(STATES, p=STATE_WEIGHTS))
        name = str(rng.choice(names[u]))
        if rng.random() < 0.15:
            name = f"{name}_try{rng.integers(0, 10_000)}"
        rows.append((submit, u, gpus, state, name))
    rows.sort(key=lambda r: r[0])

    gpu_jobs = 0
    gpu_users: set[int] = set()
    with path.open("w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(COLUMNS)
        for i, (submit, u, gpus, state, name) in enumerate(rows):
            gpu_jobs += gpus > 0
            vc = vcs[home_vc[u]] if rng.random() < 0.9 else str(rng.choice(vcs))
            cpus = gpus * 4 if gpus else int(rng.integers(1, 9))
            nodes = max(1, math.ceil(gpus / 8))
            submitted = START + timedelta(seconds=submit)
            fields = [i + 1, f"u{u:03d}", vc, name, gpus, cpus, nodes, state, _t(submitted)]
            if state == "CANCELLED" and rng.random() < 0.3:
                # Cancelled while queued: it never started, so it has no start, end or run time.
                out.writerow([*fields, "", "", "", ""])
                continue
            if gpus:
                gpu_users.add(u)
            queue = _queue(rng, gpus)
            run = _run_time(rng, gpus, state)
            start = submitted + timedelta(seconds=queue)
            end = start + timedelta(seconds=run)
            out.writerow([*fields, _t(start), _t(end), run, queue])
    return HeliosTrace(path, jobs, gpu_jobs, len({r[1] for r in rows}), len(gpu_users))


def _submit_offset(rng: np.random.Generator, days: int) -> int:
    """Seconds from START, following the daily and weekly rhythm."""
    while True:
        day = int(rng.integers(0, days))
        if (START + timedelta(days=day)).weekday() < 5 or rng.random() < WEEKEND_FACTOR:
            break
    hour = int(rng.choice(24, p=HOUR_WEIGHTS / HOUR_WEIGHTS.sum()))
    return day * 86400 + hour * 3600 + int(rng.integers(0, 3600))


def _gpus(rng: np.random.Generator, favourite: int) -> int:
    if rng.random() < 0.45:
        return 0
    if rng.random() < 0.7:
        return GPU_CHOICES[favourite]
    return int(rng.choice(GPU_CHOICES, p=GPU_WEIGHTS))


def _run_time(rng: np.random.Generator, gpus: int, state: str) -> int:
    """Log-normal run time: longer for bigger jobs, shorter when failed or cancelled."""
    median = 90.0 if gpus == 0 else 240.0 * (1 + gpus) ** 0.6
    if state in ("FAILED", "CANCELLED", "NODE_FAIL"):
        median *= 0.3
    seconds = rng.lognormal(math.log(median), 2.0)
    if state == "TIMEOUT":
        seconds = 7 * 86400.0
    return int(min(max(seconds, 1.0), 14 * 86400.0))


def _queue(rng: np.random.Generator, gpus: int) -> int:
    if rng.random() < 0.4:
        return 0
    return int(rng.exponential(20.0 + 45.0 * gpus**0.8))


def _t(stamp: datetime) -> str:
    return stamp.strftime("%Y-%m-%d %H:%M:%S")
