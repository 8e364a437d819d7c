"""The ElasticFlow traces: deadline-aware elastic training jobs (Gu et al., "ElasticFlow: An
Elastic Serverless Training Platform for Distributed Deep Learning", ASPLOS 2023).

Sources: ``microsoft/elasticflow-traces`` (commit 277ed24d0e908c31a1c98145819e2e3853d8ac00,
MIT): jobs of 10 Microsoft ITP clusters with synthetic models, iterations and deadlines;
``pkusys/ElasticFlow`` (commit 04a0109a6acdd7d89f4cb31b6a6a7a128bee6bb0, Apache-2.0): the traces
of its artifact and the files its trace generator writes. Two layouts name the same fields:

- ITP: ``job_id, submission_time, num_iteration, model_name, deadline, batch_size, num_gpu,
  duration`` (``clusterNN.csv``, ``195job.csv``);
- artifact and generator: ``job_id, submit_time, iteration, model_name, ddl, batch_size,
  num_gpu, duration`` and optionally ``best_effort`` (``elasticVpollux_e.csv``, the generated
  ``*lam*.csv``); ``philly_103959.csv`` also has ``real_iteration`` and ``real_duration``,
  which are checked as numbers but not kept (the artifact's simulator uses ``iteration`` and
  ``duration``).

Times are seconds from an unknown origin. Mapping: ``job_id``; ``submit_time`` =
submission_time / submit_time; ``num_gpus`` = num_gpu (the GPUs the job asked for, and used in
ITP); every job is ``elastic``; ``application`` = ``"elasticflow/" + model_name`` (e.g.
``elasticflow/resnet50``: the model of ElasticFlow's throughput profiles); ``batch_size`` the
global batch; ``work`` = num_iteration / iteration in ``iterations``; ``duration`` the run time
at the requested GPUs; ``deadline`` = deadline / ddl, absolute seconds on the submit clock, but
null (best effort) when ``best_effort`` is 1 (then the ddl field is read as a number and
otherwise ignored).

A row is rejected, naming its column, for: iterations not positive or above
:data:`MAX_ITERATIONS`; a ``model_name`` that is empty, longer than :data:`MAX_MODEL_CHARS` or
not made of ``A-Z a-z 0-9 _ . -``; ``best_effort`` other than 0 or 1; a submit time that is
negative or a submit time or deadline beyond :data:`dlsched.trace.checks.MAX_SECONDS`; a deadline
not after the submit time; and the checks every format shares (batch size and GPUs at least 1,
non-negative duration, unique ids).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from dlsched.safe_load import shown
from dlsched.trace.readers.fields import BadField, Row, show_number
from dlsched.trace.readers.spec import CsvFormat, RelativeTimes

APPLICATION_PREFIX = "elasticflow/"
"""What ``application`` is named: this prefix and the trace's ``model_name``."""
MAX_ITERATIONS = 1e12
"""The largest iteration count a job may give (the published traces reach 2.6e7): beyond it a
value is a mistake."""
MAX_MODEL_CHARS = 64
"""The longest ``model_name`` (the published ones have at most 16 characters)."""
_MODEL_NAME = re.compile(r"[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Layout:
    """The file's names of the fields the two layouts spell differently."""

    submit: str
    iterations: str
    deadline: str


ITP = Layout("submission_time", "num_iteration", "deadline")
ARTIFACT = Layout("submit_time", "iteration", "ddl")


class ElasticFlowParser(RelativeTimes):
    """Reads ElasticFlow rows of either layout (the header was checked to hold one)."""

    def __init__(self) -> None:
        # Imported here: the shared checks import the readers' fields (and so this package).
        from dlsched.trace.checks import MAX_SECONDS

        self._max_seconds = MAX_SECONDS

    def parse(self, row: Row) -> tuple[Any, ...]:
        names = ITP if row.has(ITP.submit) else ARTIFACT
        job_id = row.text("job_id")
        submit = self._seconds(names.submit, row.number(names.submit))
        if submit < 0:
            raise BadField(names.submit, f"negative submit time: {show_number(submit)}")
        iterations = row.number(names.iterations)
        if not 0 < iterations <= MAX_ITERATIONS:
            raise BadField(
                names.iterations,
                f"{show_number(iterations)} iterations (a job runs more than 0 and at most "
                f"{MAX_ITERATIONS:g})",
            )
        model = row.text("model_name")
        if len(model) > MAX_MODEL_CHARS or not _MODEL_NAME.fullmatch(model):
            raise BadField(
                "model_name",
                f"not a model name of up to {MAX_MODEL_CHARS} characters A-Z a-z 0-9 _ . -: "
                f"{shown(model)}",
            )
        deadline: float | None = self._seconds(names.deadline, row.number(names.deadline))
        for extra in ("real_iteration", "real_duration"):
            if row.has(extra):
                row.number(extra)
        best_effort = row.integer("best_effort") if row.has("best_effort") else 0
        if best_effort not in (0, 1):
            raise BadField("best_effort", f"expected 0 or 1, got {row.text('best_effort')!r}")
        if best_effort:
            deadline = None
        elif deadline is not None and deadline <= submit:
            raise BadField(
                names.deadline,
                f"deadline {show_number(deadline)} s is not after submit {show_number(submit)} s "
                "(deadlines are absolute times on the submit clock)",
            )
        return (
            job_id,
            submit,
            row.integer("num_gpu"),
            row.number("duration"),
            APPLICATION_PREFIX + model,
            row.integer("batch_size", bits=64),
            iterations,
            "iterations",
            "elastic",
            deadline,
        )

    def _seconds(self, name: str, value: float) -> float:
        if value > self._max_seconds:
            raise BadField(
                name,
                f"beyond the limit of {self._max_seconds:g} s (about 317 years): "
                f"{show_number(value)}",
            )
        return value


ELASTICFLOW = CsvFormat(
    name="elasticflow",
    source="ElasticFlow (ASPLOS'23) traces: ITP clusters, artifact, generator",
    required=("job_id", "model_name", "batch_size", "num_gpu", "duration"),
    optional=("best_effort", "real_iteration", "real_duration"),
    variants=(
        (ITP.submit, ITP.iterations, ITP.deadline),
        (ARTIFACT.submit, ARTIFACT.iterations, ARTIFACT.deadline),
    ),
    signature=frozenset({"model_name", "num_gpu"}),
    outputs=(
        "job_id",
        "submit_time",
        "num_gpus",
        "duration",
        "application",
        "batch_size",
        "work",
        "work_unit",
        "kind",
        "deadline",
    ),
    new_parser=ElasticFlowParser,
    gpu_jobs_note="every ElasticFlow job is a GPU job",
    source_columns=MappingProxyType({"num_gpus": "num_gpu"}),
)
