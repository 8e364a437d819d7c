"""Helios-like synthetic traces: recurring jobs from heavy-tailed users, calibrated to the
published statistics of the four Helios clusters (Venus, Earth, Saturn, Uranus).

The Helios job logs are not public here, and their public release has no job names, yet QSSF
rests on recurrence: users resubmit similar-named jobs with similar run times. This generator
writes traces in dlsched's canonical schema with users, recurring names, per-name run-time
distributions, GPU demands, final states and per-VC arrivals, whose aggregate statistics match
the published ones. Sources (bundled in ``dlsched/data/helios``, see its README):
Hu et al., "Characterization and Prediction of Deep Learning Workloads in Large-Scale GPU
Datacenters", SC'21 — per-cluster summary and VC sizes from HeliosData (CC-BY-4.0), Venus's
submission series from HeliosArtifact (MIT).

Public API: :class:`HeliosSynthConfig` -> :func:`synthesize_helios` -> :class:`HeliosSynth`
(trace, cluster, calibration report) -> :func:`write_helios_synth` (``trace.parquet``,
``cluster.toml``, ``calibration.json``); :func:`helios_cluster` alone gives the cluster.

Targets (GPU jobs over 2020-04-01..09-30, 183 days; ``cluster_summary.csv``)::

    cluster  GPU jobs  avg run s  median s  avg GPUs  completed/cancelled/failed  GPU-s per job
    Venus     125,303   13,040.6       204     6.736  0.526 / 0.272 / 0.202             98,526
    Earth     427,148    5,130.6       234     2.101  0.735 / 0.136 / 0.129             26,780
    Saturn    698,896    5,252.9       124     4.010  0.582 / 0.272 / 0.145             39,566
    Uranus    329,117    9,163.7       280     4.038  0.607 / 0.201 / 0.192             80,702

GPU-s per job is the summary's GPU-time of completed + cancelled + failed jobs over its GPU
jobs; its per-state shares (Venus 0.516 / 0.398 / 0.085) are targets too.

The model. Every "our choice" below is a parameter of :class:`PopulationParams` or
:class:`~dlsched.trace.synth.calibrate.JobModel`; "fitted" ones are solved per trace.

Cluster and VCs
    One partition per VC, 8-GPU nodes, sizes of a reference day (default 2020-09-10, the day
    the Helios artifact's simulator sizes Venus and Earth by): Venus 1,080 GPUs in 15 VCs,
    Earth 1,168 in 18. Saturn and Uranus have no VC file here: our choice is Venus's layout on
    that day scaled to their published average GPU count (2,080 and 2,119), each VC rounded to
    whole nodes (2,088 and 2,144 GPUs in 15 VCs).
Arrivals
    Submission events form a Poisson process per 10-minute slot whose rate follows Venus's
    mean GPU-job submissions in that slot of the week (diurnal and weekly shape; the series's
    181 days folded onto one week), scaled so that jobs per day average the cluster's GPU
    jobs / 183 (Venus 684.7, Earth 2,334.1, Saturn 3,819.1, Uranus 1,798.5).
    ``rate_scale`` multiplies that rate (1 = published). An event goes to a VC with
    probability proportional to its GPUs.
Users (our choices)
    A VC of G GPUs has ``max(1, round(G / 8))`` users; the k-th most active submits in
    proportion to ``k**-1.3`` (Zipf), so a few users carry most of the work, as Hu et al.
    report for Helios (qualitatively here); the share of GPU-time used by the top 10% of users
    (0.61-0.69 over ten 30-day Venus-like seeds) is in ``calibration.json``. User ids look
    like Helios's hashed ones (``u`` + 4 letters or digits).
Recurrence (our choices)
    Each user draws the template of each submission from a Pitman–Yor process (concentration
    1, discount 0.5): mostly old templates, favouring frequent ones, with new ones growing like
    the square root of the submissions. A submission is a batch (a sweep) of geometric size,
    mean 2, at most 32, jobs 3 s apart on average; each job draws its variant of the template
    from a Pitman–Yor process (1, 0.25). Names are ``{project}_{model}_{variant}`` (see
    :mod:`~dlsched.trace.synth.names`); in 30-day Venus-like traces 0.73-0.75 of the
    jobs repeat a name their user submitted before, 0.91 a name up to the variant tag.
GPU demand (fitted ratio, our choices otherwise)
    Per template: 1 GPU for a share 0.6 of the jobs (the published median is 1 GPU for every
    cluster), else 2, 4, ..., 256 GPUs with probability proportional to ``ratio**k``, the law
    truncated at a quarter of the template's VC (so that no job is larger than its VC, and
    strict FIFO does not stall behind whole-VC jobs); ``ratio`` is fitted to the published
    average GPUs. Job-weighted ranks give these shares among jobs, not templates. The normal
    score ranking a template for GPUs correlates at 0.5 with the one ranking it for being a
    debug template (below; debug runs tend to be small) and at -0.6 with the standardized log
    share of its user's jobs that it holds (our choices: a user's most repeated templates tend
    to be their small, short ones, as sweeps and retries are; without this a single heavy
    template can carry a whole VC's load, while heavy users still use most GPU-time).
Run times (fitted: debug share, training median, coupling, VC factors)
    Templates are debug (median 60 s, log-sd 1.0; our choice) or training (log-sd 1.7, our
    choice). A job's intended log run time is its class's log median, plus the log-sd times a
    standard normal made of a template part (variance share 0.7, correlated at -0.6 with the
    template's log share of its user's jobs, as above), a variant part (0.1) and a job part
    (0.2) — so history
    predicts run times, imperfectly — plus ``coupling`` times the centred log GPUs, plus a
    per-VC offset; clipped to [1 s, 7 days] (our choice). Templates are ordered by a score
    and the first ones, up to the debug share of the jobs, are debug (only the template
    straddling the share mixes classes, job by job, so that the median moves smoothly). The
    debug share is fitted to the published median, the training median to the published
    mean, the coupling (which may come out negative: sizes and run times already correlate
    through the scores) to the published GPU-time per job, and the per-VC factors (within
    1/4..4) so that each VC's GPU-time is proportional to its size: every VC is offered about
    the cluster's load (our choice; an open-loop trace has no users who hold back when their
    VC is full).
Final states (fitted)
    P(state) is proportional to ``w_s * exp(t_s * x)``, x the standardized log intended
    GPU-time (t of COMPLETED = 0); weights and tilts are fitted to the published state shares
    and per-state GPU-time shares. Cancelled and failed jobs end early: they run a uniform
    random fraction of their intended time (our choice). The published GPU-time per cancelled
    job exceeds that per completed job (Venus 144k vs 97k GPU-s), so cancellation must favour
    long, large jobs (t > 0) even though each cancelled job stops early.
Other columns
    ``num_cpus`` = GPUs x 1, 2 or 4 per template (HeliosData's README examples: 1 GPU with
    1 CPU, 4 GPUs with 16); ``num_nodes`` = ceil(GPUs / 8); ``job_id`` 1, 2, ... in submit
    order; ``start_time``/``end_time`` null (the simulator decides starts); ``origin_unix`` =
    2020-04-01 00:00 UTC (the profile's clock taken as UTC). GPU jobs only: the Helios
    evaluation simulates GPU jobs only.

Calibration runs on the trace's own draws (see :mod:`~dlsched.trace.synth.calibrate`),
so the statistics hold for the trace as written, at any length: over ten 30-day Venus-like
seeds mean run time and GPU-time per job within 0.1%, median run time within 0.5%, average
GPUs within 2% (it moves in steps of whole templates), state shares within 0.01 (sampling
noise). A fit that reaches the end of its range shows as a miss in ``calibration.json``. A
trace is calibrated as a whole: a longer trace is not an extension of a shorter one with the
same seed.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from dlsched.cluster.layout import NodeGroup, expand_groups
from dlsched.cluster.spec import ClusterSpec
from dlsched.cluster.toml_io import write_cluster_toml
from dlsched.outdir import DirKind
from dlsched.trace.io import write_parquet
from dlsched.trace.schema import Trace
from dlsched.trace.synth.calibrate import Calibrated, Draws, JobModel, calibrate
from dlsched.trace.synth.choices import REFERENCE_DAY
from dlsched.trace.synth.data import (
    NODE_GPUS,
    ORIGIN_UNIX,
    PERIOD_DAYS,
    STATES,
    ClusterTargets,
    load_targets,
    origin_week_slot,
    vc_sizes,
    weekly_profile,
)
from dlsched.trace.synth.gpus import largest_size_within
from dlsched.trace.synth.names import job_names, template_stems
from dlsched.trace.synth.population import Population, PopulationParams, draw_population
from dlsched.trace.synth.stats import (
    comparison_rows,
    published_statistics,
    trace_statistics,
)

TRACE_FILE = "trace.parquet"
CLUSTER_FILE = "cluster.toml"
CALIBRATION_FILE = "calibration.json"
CPUS_PER_GPU = (1, 2, 4)


@dataclass(frozen=True)
class HeliosSynthConfig:
    """One generated trace: the cluster it resembles (``like``, one of
    :data:`~dlsched.trace.synth.data.HELIOS_CLUSTERS`), its length in days, the seed,
    the day whose VC sizes make the cluster, a factor on the published job rate, and the
    model's fixed parameters."""

    like: str
    days: float
    seed: int = 0
    vc_day: str = REFERENCE_DAY
    rate_scale: float = 1.0
    population: PopulationParams = field(default_factory=PopulationParams)
    jobs: JobModel = field(default_factory=JobModel)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.days) and self.days > 0):
            raise ValueError(f"days must be a positive number, got {self.days}")
        if not (math.isfinite(self.rate_scale) and self.rate_scale > 0):
            raise ValueError(f"rate_scale must be a positive number, got {self.rate_scale}")


@dataclass(frozen=True)
class HeliosSynth:
    """A generated trace, the cluster it runs on, and its calibration report (JSON-ready)."""

    trace: Trace
    cluster: ClusterSpec
    calibration: dict[str, Any]


def helios_cluster(like: str, vc_day: str = REFERENCE_DAY) -> ClusterSpec:
    """The cluster of a Helios-like trace: one partition per VC (see
    :func:`~dlsched.trace.synth.data.vc_sizes`), each of ``GPUs / 8`` nodes of 8 GPUs
    named ``<vc>-000`` onwards, racks of 16 nodes starting afresh in each VC."""
    targets = load_targets(like)
    sizes = vc_sizes(like, vc_day)
    groups = [
        NodeGroup(count=gpus // NODE_GPUS, gpus=NODE_GPUS, partition=vc, name_prefix=vc)
        for vc, gpus in sizes.items()
    ]
    return ClusterSpec(
        name=f"helios-{targets.name.lower()}-synth",
        nodes=tuple(expand_groups(groups)),
        description=(
            f"{targets.name}-like VCs sized as on {vc_day} ({sum(sizes.values())} GPUs, "
            f"{len(sizes)} VCs of 8-GPU nodes)"
        ),
        source=f"dlsched.trace.synth.helios (HeliosData {vc_day})",
    )


def synthesize_helios(config: HeliosSynthConfig) -> HeliosSynth:
    """Generate the trace described by ``config`` (see the module docstring).

    The same config always gives the same trace, cluster and report. Raises ValueError for an
    unknown cluster or a day without VC sizes.
    """
    targets = load_targets(config.like)
    cluster = helios_cluster(config.like, config.vc_day)
    sizes = cluster.partition_gpus()
    rng = np.random.default_rng(config.seed)
    population = draw_population(
        sizes,
        config.days,
        targets.jobs_per_day * config.rate_scale,
        weekly_profile(),
        origin_week_slot(),
        config.population,
        rng,
    )
    vc_gpus = np.array([sizes[v] for v in population.vc_names], dtype=np.int64)
    template_vc_gpus = vc_gpus[population.user_vc[population.template_user]]
    template_cap = largest_size_within(
        np.maximum(1, np.floor(template_vc_gpus * config.jobs.max_vc_share)).astype(np.int64)
    )
    draws = Draws.draw(
        population.template_user.size,
        population.variant_template.size,
        population.submit.size,
        rng,
    )
    fit = calibrate(
        targets,
        config.jobs,
        draws,
        population.template,
        population.variant,
        template_cap,
        population.template_user,
        population.job_vc,
        vc_gpus,
    )
    trace = _build_trace(population, fit, config, rng)
    return HeliosSynth(trace, cluster, _report(config, targets, trace, cluster, fit))


def _build_trace(
    population: Population, fit: Calibrated, config: HeliosSynthConfig, rng: np.random.Generator
) -> Trace:
    stems, kinds = template_stems(population.template_user, len(population.user_names), rng)
    names = job_names(
        stems,
        kinds,
        fit.template_debug,
        population.variant_template,
        population.variant_rank,
        population.variant,
    )
    template_cpus = np.asarray(CPUS_PER_GPU)[
        rng.integers(0, len(CPUS_PER_GPU), size=population.template_user.size)
    ]
    gpus = fit.template_gpus[population.template]
    n = population.submit.size
    columns: dict[str, Any] = {
        "job_id": [str(i + 1) for i in range(n)],
        "submit_time": population.submit,
        "num_gpus": gpus.astype(np.int32),
        "duration": fit.duration,
        "user": [population.user_names[u] for u in population.job_user],
        "vc": [population.vc_names[v] for v in population.job_vc],
        "job_name": names,
        "state": [STATES[s] for s in fit.state],
        "num_cpus": (gpus * template_cpus[population.template]).astype(np.float64),
        "num_nodes": np.maximum(1, -(-gpus // NODE_GPUS)).astype(np.int32),
    }
    source = f"helios_synth(like={config.like.lower()}, days={config.days:g}, seed={config.seed})"
    return Trace.from_columns(columns, source, ORIGIN_UNIX)


def _report(
    config: HeliosSynthConfig,
    targets: ClusterTargets,
    trace: Trace,
    cluster: ClusterSpec,
    fit: Calibrated,
) -> dict[str, Any]:
    generated = trace_statistics(trace, config.days)
    span = config.days * 86400.0
    used = trace.column("num_gpus").to_numpy() * trace.column("duration").to_numpy()
    sizes = cluster.partition_gpus()
    per_vc = dict.fromkeys(sizes, 0.0)
    for vc, gpu_s in zip(trace.column("vc").to_pylist(), used.tolist(), strict=True):
        per_vc[vc] += gpu_s
    offered = float(used.sum()) / (span * cluster.total_gpus)
    published_load = targets.gpu_time_total / (PERIOD_DAYS * 86400.0 * targets.gpu_num)
    return {
        "generator": "dlsched.trace.synth.helios",
        "like": targets.name,
        "days": config.days,
        "seed": config.seed,
        "rate_scale": config.rate_scale,
        "origin_utc": datetime.fromtimestamp(ORIGIN_UNIX, UTC).isoformat(),
        "jobs": len(trace),
        "vc_day": config.vc_day,
        "cluster_gpus": cluster.total_gpus,
        "vc_gpus": cluster.partition_gpus(),
        "offered_load": {"generated": offered, "published": published_load},
        "vc_offered_load": {vc: per_vc[vc] / (span * gpus) for vc, gpus in sizes.items()},
        "published_avg_queue_s": targets.avg_queue_s,
        "statistics": comparison_rows(generated, published_statistics(targets)),
        "fitted": {
            **asdict(fit.fitted),
            # Calibration orders VCs as the cluster does; name them for the reader.
            "vc_duration_factors": dict(zip(sizes, fit.fitted.vc_duration_factors, strict=True)),
        },
        "job_model": asdict(config.jobs),
        "population": asdict(config.population),
    }


SYNTH_FILES = (TRACE_FILE, CLUSTER_FILE, CALIBRATION_FILE)
SYNTH_DIR = DirKind("synthetic trace directory", SYNTH_FILES)
"""Synthetic trace directories as outputs (:mod:`dlsched.outdir`)."""


def write_helios_synth(
    synth: HeliosSynth, out_dir: str | os.PathLike[str], force: bool = False
) -> dict[str, Path]:
    """Write ``trace.parquet``, ``cluster.toml`` and ``calibration.json`` into the directory
    ``out_dir``, all three or none (an earlier one is replaced only with ``force``; see
    :mod:`dlsched.outdir`). Returns the paths by file name.

    Raises :class:`dlsched.outdir.OutputError` if ``out_dir`` may not be written.
    """
    out = Path(out_dir)

    def fill(tmp: Path) -> None:
        write_parquet(synth.trace, tmp / TRACE_FILE)
        write_cluster_toml(synth.cluster, tmp / CLUSTER_FILE)
        (tmp / CALIBRATION_FILE).write_text(json.dumps(synth.calibration, indent=2) + "\n")

    SYNTH_DIR.write(out, fill, force)
    return {name: out / name for name in SYNTH_FILES}
