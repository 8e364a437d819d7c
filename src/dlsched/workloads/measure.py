"""Throughputs measured by live training jobs, as a table the simulator can use.

:func:`collect_throughputs` reads the status files of a finished live run and keeps, per
``(model, GPUs, per-GPU batch)``, the mean of the jobs' measured samples/s.
:class:`ThroughputTable` answers any GPU count from the measured ones (linear between measured
counts, the nearest measured count outside them: no extrapolation) and turns a job's samples
into a run time, which is what a replayed trace gives the simulator. Run
``python -m dlsched.workloads.measure DIR... --out table.json`` to build and save one.
"""

from __future__ import annotations

import argparse
import bisect
import json
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

from dlsched.outdir import FileKind, OutputError
from dlsched.safe_load import load_json, read_text
from dlsched.workloads.status import StatusError, read_status

Key = tuple[str, int, int]
"""(model, GPUs, per-GPU batch size)."""


class ThroughputTable:
    """Measured samples/s by (model, GPUs, per-GPU batch); each value positive."""

    def __init__(self, points: Mapping[Key, float]) -> None:
        for key, value in points.items():
            if not value > 0:
                raise ValueError(f"throughput of {key} must be > 0, got {value}")
        self.points: Mapping[Key, float] = MappingProxyType(dict(sorted(points.items())))

    def samples_per_s(self, model: str, gpus: int, batch_size: int) -> float:
        """Throughput at ``gpus``: measured, else linear between the nearest measured GPU
        counts of the same model and batch, else that of the nearest one. Raises KeyError
        naming what was measured when the model and batch were never measured."""
        if (model, gpus, batch_size) in self.points:
            return self.points[model, gpus, batch_size]
        seen = sorted(g for (m, g, b) in self.points if m == model and b == batch_size)
        if not seen:
            known = ", ".join(f"{m}/batch {b}" for m, _, b in self.points) or "nothing"
            raise KeyError(f"no throughput measured for {model} at batch {batch_size}: {known}")
        i = bisect.bisect_left(seen, gpus)
        if i == 0 or i == len(seen):
            return self.points[model, seen[0 if i == 0 else -1], batch_size]
        lo, hi = seen[i - 1], seen[i]
        x_lo, x_hi = self.points[model, lo, batch_size], self.points[model, hi, batch_size]
        return x_lo + (x_hi - x_lo) * (gpus - lo) / (hi - lo)

    def duration_s(self, model: str, gpus: int, batch_size: int, samples: int) -> float:
        """Seconds to train ``samples`` samples at the throughput of that configuration."""
        return samples / self.samples_per_s(model, gpus, batch_size)

    def to_json(self) -> str:
        """The table as a JSON list of ``{"model", "gpus", "batch_size", "samples_per_s"}``."""
        rows = [
            {"model": m, "gpus": g, "batch_size": b, "samples_per_s": round(v, 3)}
            for (m, g, b), v in self.points.items()
        ]
        return json.dumps(rows, indent=1)

    @classmethod
    def read(cls, path: Path) -> ThroughputTable:
        """Read a table written by :meth:`write`; ValueError naming the file and row if bad."""
        try:
            rows = load_json(read_text(path), str(path))
        except (OSError, ValueError) as e:
            raise ValueError(f"{path}: cannot read a throughput table: {e}") from None
        if not isinstance(rows, list):
            raise ValueError(f"{path}: expected a JSON list of rows")
        points: dict[Key, float] = {}
        for i, row in enumerate(rows):
            try:
                key = (str(row["model"]), int(row["gpus"]), int(row["batch_size"]))
                points[key] = float(row["samples_per_s"])
            except (TypeError, KeyError, ValueError) as e:
                raise ValueError(
                    f"{path}: row {i}: expected model, gpus, batch_size, samples_per_s: {e!r}"
                ) from None
        try:
            return cls(points)
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None

    def write(self, path: Path, force: bool = False) -> None:
        """Write the table as JSON, atomically; an earlier table at ``path`` is replaced only
        with ``force``, and nothing else ever is (:data:`TABLE_FILE`)."""

        def put(tmp: Path) -> None:
            tmp.write_text(self.to_json() + "\n", encoding="utf-8")

        TABLE_FILE.write(path, put, force)


def _is_table(path: Path) -> bool:
    try:
        ThroughputTable.read(path)
    except ValueError:
        return False
    return True


TABLE_FILE = FileKind("throughput table", _is_table)
"""Throughput tables as outputs (:mod:`dlsched.outdir`)."""


def collect_throughputs(status_files: Iterable[Path]) -> ThroughputTable:
    """The mean measured throughput per (model, GPUs, per-GPU batch) over ``status_files``.
    Files without a measurement yet (``samples_per_s`` 0) or without a model name are
    skipped. Raises :class:`~dlsched.workloads.status.StatusError` for an invalid file."""
    runs: dict[Key, list[float]] = defaultdict(list)
    for path in status_files:
        s = read_status(path)
        if s.samples_per_s > 0 and s.model:
            runs[s.model, s.num_gpus, s.batch_size].append(s.samples_per_s)
    return ThroughputTable({k: sum(v) / len(v) for k, v in runs.items()})


def main(argv: Sequence[str] | None = None) -> int:
    """Collect ``status*.json`` under the given directories, print the table, optionally
    write it (``--out``)."""
    p = argparse.ArgumentParser(prog="python -m dlsched.workloads.measure")
    p.add_argument("dirs", nargs="+", type=Path, help="directories holding job status files")
    p.add_argument("--out", type=Path, default=None, help="JSON table to write")
    p.add_argument("--force", action="store_true", help="replace an earlier table at --out")
    args = p.parse_args(argv)
    files = sorted(f for d in args.dirs for f in d.rglob("status*.json"))
    try:
        if args.out is not None:
            TABLE_FILE.check(args.out, args.force)
        table = collect_throughputs(files)
        if args.out is not None:
            table.write(args.out, args.force)
    except (StatusError, OutputError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{len(files)} status files")
    for (model, gpus, batch), value in table.points.items():
        print(f"{model:16} gpus={gpus:<3} batch={batch:<5} {value:10.1f} samples/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
