"""The report directory of a request trace: ``index.html``, ``rate.png``, ``lengths.png`` and
``stats.json`` (every number the page shows), written whole or not at all."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from dlsched.analysis.html import page_start, paragraph, table
from dlsched.outdir import DirKind
from dlsched.serving.characterize import QUANTILES, LengthStats, RequestCharacterization
from dlsched.serving.requests import RequestTrace

INDEX, STATS, RATE, LENGTHS = "index.html", "stats.json", "rate.png", "lengths.png"
REQUEST_REPORT_DIR = DirKind("request-trace report directory", (INDEX, STATS, RATE, LENGTHS))
CSS = "body{font-family:sans-serif;max-width:60em;margin:auto}td,th{padding:2px 8px}"


def _rate_figure(c: RequestCharacterization) -> Figure:
    figure = Figure(figsize=(10, 3.6), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    ax = figure.subplots()
    minutes = np.arange(len(c.rate_per_bin)) * c.bin_seconds / 60.0
    ax.step(minutes, c.rate_per_bin, where="post")
    ax.set_xlabel("minutes from the first arrival")
    ax.set_ylabel(f"requests/s (per {c.bin_seconds:g} s)")
    ax.set_title("Arrival rate over time")
    return figure


def _lengths_figure(trace: RequestTrace) -> Figure:
    _, prompts, outputs = trace.arrays()
    figure = Figure(figsize=(10, 3.6), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(1, 2)
    for ax, values, name in ((axes[0], prompts, "prompt"), (axes[1], outputs, "output")):
        ordered = np.sort(values)
        ax.plot(ordered, np.arange(1, len(ordered) + 1) / len(ordered))
        ax.set_xscale("log")
        ax.set_xlabel(f"{name} tokens")
        ax.set_ylabel("fraction of requests")
        ax.set_title(f"{name.capitalize()} length CDF")
    return figure


def _length_rows(name: str, s: LengthStats) -> list[str]:
    return [name, f"{s.mean:,.0f}", *[f"{q:,.0f}" for q in s.quantiles], f"{s.maximum:,}"]


def _html(c: RequestCharacterization, source: str, fmt: str) -> str:
    def show(value: float | None, spec: str) -> str:
        return "n/a" if value is None else format(value, spec)

    lines = page_start(f"Request trace: {source}", CSS)
    lines.append(
        paragraph(
            f"{c.requests:,} requests ({fmt}) over {c.duration_s / 60:,.1f} min; mean rate "
            f"{show(c.mean_rate, '.2f')}/s, peak {c.bin_seconds:g}-s rate "
            f"{show(c.peak_to_mean, '.2f')}x the mean, CV of inter-arrival gaps "
            f"{show(c.gap_cv, '.2f')} (1 for Poisson); prompt-output correlation "
            f"{show(c.length_correlation, '.2f')}."
        )
    )
    lines.append(f'<h2>Arrival rate</h2><img src="{RATE}" alt="arrival rate over time">')
    head = ["tokens", "mean", *[f"p{round(q * 100)}" for q in QUANTILES], "max"]
    lines.append("<h2>Lengths</h2>")
    lines.append(table(head, [_length_rows("prompt", c.prompt), _length_rows("output", c.output)]))
    lines.append(f'<img src="{LENGTHS}" alt="prompt and output length CDFs">')
    lines.append("</main></body></html>")
    return "\n".join(lines)


def write_request_report(
    out: str | Path,
    trace: RequestTrace,
    c: RequestCharacterization,
    fmt: str,
    force: bool = False,
) -> Path:
    """Write the report of ``trace`` to ``out`` (replacing an earlier one only with
    ``force``; nothing else is ever replaced)."""

    def fill(tmp: Path) -> None:
        _rate_figure(c).savefig(tmp / RATE)
        _lengths_figure(trace).savefig(tmp / LENGTHS)
        stats = {"source": trace.source, "format": fmt, **dataclasses.asdict(c)}
        stats["quantiles"] = list(QUANTILES)
        (tmp / STATS).write_text(json.dumps(stats, indent=1) + "\n")
        (tmp / INDEX).write_text(_html(c, trace.source, fmt), encoding="utf-8")

    return REQUEST_REPORT_DIR.write(out, fill, force)
