"""A :class:`~dlsched.analysis.compare.Comparison` as CSV or JSON (``compare --format``).

Both hold the same columns: ``run`` (the directory as given), ``label`` (its name),
``policy`` (a serving run's: ``scheduler``), then every figure the table lists, named by its
summary key (dotted for a nested one: ``ttft_s.p99``, ``tenants.vc-a.avg_jct_s``,
``starts_by_tier.rack``). Values are the summaries' own: plain numbers in seconds, kWh, GPUs
or counts, and shares as fractions (0.327, not 32.7%); a figure that does not apply to a run,
or has no value, is empty in CSV and null in JSON, never 0.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from dlsched.analysis.compare import Comparison, Figure


def columns(cmp: Comparison, figures: list[Figure]) -> list[tuple[str, tuple[Any, ...]]]:
    """(name, one value per run) of every column, in order (module docstring)."""
    out: list[tuple[str, tuple[Any, ...]]] = [
        ("run", cmp.runs),
        ("label", cmp.labels),
        (cmp.policy_key, tuple(cmp.policies())),
    ]
    for figure in figures:
        out += figure.columns()
    return out


def to_csv(cmp: Comparison) -> str:
    """One header row, then one row per run."""
    cols = columns(cmp, cmp.figures())
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([name for name, _ in cols])
    for i in range(len(cmp.runs)):
        writer.writerow([_cell(values[i]) for _, values in cols])
    return buffer.getvalue()


def records(cmp: Comparison) -> list[dict[str, Any]]:
    """One object per run: its columns, and ``ratios``: for each figure the table shows a
    ratio of, the run's value over the first run's (null when either is not a number or the
    first is 0; 1 for the first run's own numbers)."""
    figures = cmp.figures()
    cols = columns(cmp, figures)
    out = []
    for i in range(len(cmp.runs)):
        record: dict[str, Any] = {name: values[i] for name, values in cols}
        record["ratios"] = {f.key: f.ratio(i) for f in figures if f.ratios}
        out.append(record)
    return out


def to_json(cmp: Comparison) -> str:
    """:func:`records` as a JSON list."""
    return json.dumps(records(cmp), indent=1, allow_nan=False) + "\n"


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)
