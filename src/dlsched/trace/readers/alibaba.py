"""Alibaba GPU-sharing cluster pods, 2023 (``openb_pod_list_*.csv`` of cluster-trace-gpu-v2023).

Columns: ``name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos, pod_phase,
creation_time, deletion_time, scheduled_time``; times are seconds from the trace's start.

Mapping: submit = creation_time, start = scheduled_time, end = deletion_time, duration =
deletion - scheduled; ``num_cpus`` = cpu_milli / 1000; ``gpu_milli`` is the share of each GPU
(1000 = whole GPUs); ``gpu_type`` = gpu_spec as written ('|' separates acceptable types; empty =
any, stored as null); ``qos`` has no canonical column and is not kept. ``num_gpu`` 0 is a CPU pod
(valid; its gpu_milli must be 0 and is stored as null). ``pod_phase`` is the pod's last phase,
mapped to dlsched's state names: Succeeded -> COMPLETED, Failed -> FAILED, Running -> RUNNING
(still running when deleted, or at the trace's end), Pending -> PENDING.

Pending pods were never scheduled: their ``scheduled_time`` is empty, so ``start_time`` and
``duration`` are null while ``end_time`` is when the pending pod was deleted. Any other pod without
a ``scheduled_time``, or a Pending pod with one, is rejected.

The publishers' variant files with only the first five columns (e.g. ``multigpu50``) carry no
times at all; they describe a set of pods to pack, not arrivals, so they are refused with a
missing ``creation_time`` column rather than given invented submit times.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from dlsched.trace.readers.fields import BadField, Row
from dlsched.trace.readers.spec import CsvFormat, RelativeTimes

POD_PHASES = MappingProxyType(
    {"Succeeded": "COMPLETED", "Failed": "FAILED", "Running": "RUNNING", "Pending": "PENDING"}
)


class AlibabaParser(RelativeTimes):
    """Reads Alibaba 2023 pod rows."""

    def parse(self, row: Row) -> tuple[Any, ...]:
        job_id = row.text("name")
        num_cpus = row.number("cpu_milli") / 1000.0
        memory = row.number("memory_mib")
        num_gpus = row.integer("num_gpu")
        gpu_milli: int | None = row.integer("gpu_milli")
        if num_gpus == 0:
            if gpu_milli != 0:
                raise BadField("gpu_milli", f"{gpu_milli} for a pod without GPUs")
            gpu_milli = None
        phase = row.text("pod_phase")
        state = POD_PHASES.get(phase)
        if state is None:
            raise BadField(
                "pod_phase", f"unknown phase {phase!r} (expected one of {list(POD_PHASES)})"
            )
        submit = row.number("creation_time")
        end = row.number("deletion_time")
        start = row.opt_number("scheduled_time")
        if state == "PENDING":
            if start is not None:
                raise BadField("scheduled_time", "a Pending pod cannot have been scheduled")
            duration = None
        elif start is None:
            raise BadField("scheduled_time", f"missing value (only Pending pods lack one; {phase})")
        else:
            duration = end - start
        return (
            job_id,
            submit,
            num_gpus,
            duration,
            state,
            row.opt_text("gpu_spec"),
            num_cpus,
            memory,
            gpu_milli,
            start,
            end,
        )


ALIBABA_2023 = CsvFormat(
    name="alibaba-2023",
    source="Alibaba cluster-trace-gpu-v2023 openb_pod_list",
    required=(
        "name",
        "cpu_milli",
        "memory_mib",
        "num_gpu",
        "gpu_milli",
        "pod_phase",
        "creation_time",
        "deletion_time",
        "scheduled_time",
    ),
    optional=("gpu_spec", "qos"),
    signature=frozenset({"name", "num_gpu", "gpu_milli"}),
    outputs=(
        "job_id",
        "submit_time",
        "num_gpus",
        "duration",
        "state",
        "gpu_type",
        "num_cpus",
        "memory_mib",
        "gpu_milli",
        "start_time",
        "end_time",
    ),
    new_parser=AlibabaParser,
    missing_column_note=(
        "the publishers' variant files without time columns (such as openb_pod_list_multigpu50) "
        "list pods to pack, not arrivals, and cannot be read as a trace"
    ),
    source_columns=MappingProxyType(
        {
            "job_id": "name",
            "submit_time": "creation_time",
            "start_time": "scheduled_time",
            "end_time": "deletion_time",
            "num_gpus": "num_gpu",
            "num_cpus": "cpu_milli",
            "gpu_type": "gpu_spec",
            "state": "pod_phase",
        }
    ),
)
