"""The published Helios figures the Helios-like generator is calibrated to, read from the files
bundled in ``dlsched/data/helios`` (sources and licences in that folder's README).

* ``cluster_summary.csv`` — per-cluster statistics of the Helios trace, April–September 2020
  (Hu et al., "Characterization and Prediction of Deep Learning Workloads in Large-Scale GPU
  Datacenters", SC'21; HeliosData, CC-BY-4.0): GPU jobs, average and median run time, average
  GPUs, final-state shares and GPU-time per final state of the GPU jobs.
* ``venus_cluster_gpu_number.csv``, ``earth_cluster_gpu_number.csv`` — GPUs per virtual cluster
  (VC) per day (HeliosData, CC-BY-4.0).
* ``venus_gpu_submissions_weekly.csv`` — GPU-job submissions of Venus per 10-minute slot of the
  week, summed over 2020-04-01..09-28 (derived from the HeliosArtifact series
  ``venus_submissions_10min.csv``, MIT, by :func:`fold_weekly`).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from importlib import resources

import numpy as np
import numpy.typing as npt

from dlsched.trace.synth.choices import HELIOS_CLUSTERS, REFERENCE_DAY

# The trace period: 2020-04-01..09-30 (the summary's job counts are per this whole period).
PERIOD_DAYS = 183
PERIOD_START = date(2020, 4, 1)
ORIGIN_UNIX = datetime(2020, 4, 1, tzinfo=UTC).timestamp()
NODE_GPUS = 8
SLOT_S = 600
SLOTS_PER_DAY = 144
SLOTS_PER_WEEK = 7 * SLOTS_PER_DAY
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
STATES = ("COMPLETED", "CANCELLED", "FAILED")
# Saturn and Uranus publish no VC file here: they take Venus's VC layout on REFERENCE_DAY,
# scaled to their published average GPU count (see vc_sizes).
LAYOUT_DONOR = "venus"

_SUMMARY_FILE = "cluster_summary.csv"
_PROFILE_FILE = "venus_gpu_submissions_weekly.csv"


@dataclass(frozen=True)
class ClusterTargets:
    """The published GPU-job statistics of one Helios cluster (times in seconds).

    ``state_shares`` and ``gpu_time_shares`` are keyed by :data:`STATES` (TIMEOUT and NODE_FAIL
    count as FAILED in the source) and each sums to 1. ``gpu_time_total`` is the GPU-seconds of
    all GPU jobs over the period, the sum of the per-state figures.
    """

    name: str
    gpu_num: int
    gpu_jobs: int
    avg_run_s: float
    median_run_s: float
    avg_queue_s: float
    avg_gpus: float
    state_shares: dict[str, float]
    gpu_time_shares: dict[str, float]
    gpu_time_total: float

    @property
    def jobs_per_day(self) -> float:
        """GPU jobs per day over the 183-day period."""
        return self.gpu_jobs / PERIOD_DAYS

    @property
    def gpu_time_per_job(self) -> float:
        """Mean GPU-seconds per GPU job (total GPU-time over GPU jobs)."""
        return self.gpu_time_total / self.gpu_jobs


def _helios_text(name: str) -> str:
    return (resources.files("dlsched") / "data" / "helios" / name).read_text(encoding="utf-8")


def _check_like(like: str) -> str:
    key = like.strip().lower()
    if key not in HELIOS_CLUSTERS:
        raise ValueError(f"unknown Helios cluster {like!r}; expected one of {HELIOS_CLUSTERS}")
    return key


def load_targets(like: str) -> ClusterTargets:
    """The published statistics of Helios cluster ``like`` (case-insensitive).

    Raises ValueError for a name not in :data:`HELIOS_CLUSTERS`.
    """
    key = _check_like(like)
    for row in csv.DictReader(io.StringIO(_helios_text(_SUMMARY_FILE))):
        if row["id"].lower() != key:
            continue
        times = [float(row[f"{s}_gpu_time"]) for s in ("complete", "cancel", "fail")]
        total = sum(times)
        rates = [float(row[f"{s}_rate_gpu"]) for s in ("complete", "cancel", "fail")]
        return ClusterTargets(
            name=row["id"],
            gpu_num=int(row["gpu_num"]),
            gpu_jobs=int(row["gpu_job_num"]),
            avg_run_s=float(row["avg_run_time_gpu"]),
            median_run_s=float(row["med_run_time_gpu"]),
            avg_queue_s=float(row["avg_que_time_gpu"]),
            avg_gpus=float(row["avg_gpu_num"]),
            state_shares=dict(zip(STATES, (r / sum(rates) for r in rates), strict=True)),
            gpu_time_shares=dict(zip(STATES, (t / total for t in times), strict=True)),
            gpu_time_total=total,
        )
    raise ValueError(f"{_SUMMARY_FILE}: no row for cluster {like!r}")  # a broken install


def _gpu_number_row(cluster: str, day: str) -> dict[str, int]:
    rows = csv.DictReader(io.StringIO(_helios_text(f"{cluster}_cluster_gpu_number.csv")))
    for row in rows:
        if row["date"] == day:
            return {k: int(v) for k, v in row.items() if k not in ("date", "total")}
    raise ValueError(f"no VC sizes for {cluster} on {day!r}; the file covers 2020-04-01..09-28")


def vc_sizes(like: str, day: str = REFERENCE_DAY) -> dict[str, int]:
    """GPUs per VC (file order, VCs with no GPUs left out) of the cluster ``like`` resembles.

    Venus and Earth: their published sizes on ``day`` (YYYY-MM-DD, 2020-04-01..09-28). Saturn and
    Uranus, which have no VC file here: Venus's layout on ``day`` scaled so that the total is
    their published average GPU count (``gpu_num`` of the summary: 2,080 and 2,119), each VC
    rounded to whole 8-GPU nodes and keeping at least one. The VC names are then Venus's.
    """
    key = _check_like(like)
    if key in ("venus", "earth"):
        sizes = _gpu_number_row(key, day)
    else:
        donor = _gpu_number_row(LAYOUT_DONOR, day)
        scale = load_targets(key).gpu_num / sum(donor.values())
        sizes = {
            vc: NODE_GPUS * max(1, round(gpus * scale / NODE_GPUS)) if gpus else 0
            for vc, gpus in donor.items()
        }
    return {vc: gpus for vc, gpus in sizes.items() if gpus > 0}


def fold_weekly(times: Sequence[str], counts: Sequence[int]) -> list[tuple[str, str, int, int]]:
    """Fold a 10-minute series onto the week: ``(weekday, HH:MM, summed count, days)`` rows.

    ``times`` are ``YYYY-MM-DD HH:MM:SS`` slot starts; rows are ordered Monday 00:00 first and
    ``days`` counts how many slots were summed into each. This is how the bundled weekly profile
    was made from ``venus_submissions_10min.csv`` (column ``submit_gpu_job``).
    """
    sums = [0] * SLOTS_PER_WEEK
    seen = [0] * SLOTS_PER_WEEK
    for text, count in zip(times, counts, strict=True):
        stamp = datetime.fromisoformat(text)
        if stamp.minute % 10 or stamp.second:
            raise ValueError(f"{text!r} does not start a 10-minute slot")
        slot = stamp.weekday() * SLOTS_PER_DAY + (stamp.hour * 60 + stamp.minute) // 10
        sums[slot] += int(count)
        seen[slot] += 1
    return [
        (WEEKDAYS[s // SLOTS_PER_DAY], f"{(s % SLOTS_PER_DAY) // 6:02d}:{(s % 6) * 10:02d}", n, d)
        for s, (n, d) in enumerate(zip(sums, seen, strict=True))
    ]


def format_weekly(rows: Iterable[tuple[str, str, int, int]]) -> str:
    """The CSV text of :func:`fold_weekly` rows, as bundled."""
    lines = ["weekday,time,submitted_gpu_jobs,days"]
    lines += [f"{w},{t},{n},{d}" for w, t, n, d in rows]
    return "\n".join(lines) + "\n"


def weekly_profile() -> npt.NDArray[np.float64]:
    """Mean Venus GPU-job submissions per 10-minute slot of the week, Monday 00:00 first
    (1,008 values), from the bundled weekly file."""
    rows = list(csv.DictReader(io.StringIO(_helios_text(_PROFILE_FILE))))
    if len(rows) != SLOTS_PER_WEEK:
        raise ValueError(f"{_PROFILE_FILE}: expected {SLOTS_PER_WEEK} rows, got {len(rows)}")
    mean = [int(r["submitted_gpu_jobs"]) / int(r["days"]) for r in rows]
    profile = np.asarray(mean, dtype=np.float64)
    if not (np.all(np.isfinite(profile)) and profile.sum() > 0 and math.isfinite(profile.sum())):
        raise ValueError(f"{_PROFILE_FILE}: not a usable profile")
    return profile


def origin_week_slot() -> int:
    """The weekly slot of the trace origin (2020-04-01 00:00, a Wednesday)."""
    return PERIOD_START.weekday() * SLOTS_PER_DAY
