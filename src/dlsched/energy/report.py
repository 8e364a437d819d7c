"""The replay report directory: ``stats.json``, ``index.html`` and two PNG figures.

``stats.json`` holds every number the page shows. The page needs nothing but the files beside
it (inline CSS, no scripts). The directory is written whole or not at all: files go to a fresh
sibling directory that is renamed into place at the end (as :mod:`dlsched.metrics.rundir`
does), and an existing ``out`` is replaced only when it is empty or holds a previous report.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

from dlsched.analysis.html import escape as _e
from dlsched.analysis.html import page_start
from dlsched.analysis.html import paragraph as _p
from dlsched.analysis.html import table as _table
from dlsched.energy.replay import (
    DGX1_SOURCE,
    IDLE_SOURCE,
    PowerModel,
    ReplayResult,
    RuleSummary,
    reported_horizons,
)
from dlsched.energy.series import STEP_S, STEPS_PER_DAY
from dlsched.outdir import DirKind

STATS_VERSION = 1
INDEX, STATS = "index.html", "stats.json"
NODES_PNG, ACCURACY_PNG = "nodes.png", "accuracy.png"
REPORT_FILES = frozenset({INDEX, STATS, NODES_PNG, ACCURACY_PNG})
HELIOS_CITATION = (
    "Hu, Sun, Yan, Wen, Zhang, “Characterization and Prediction of Deep Learning Workloads in "
    "Large-Scale GPU Datacenters”, SC'21 (artifact: S-Lab-System-Group/HeliosArtifact)"
)
PUBLISHED_PHILLY = {
    "mean_powered_off_nodes": 94.6,
    "utilization_before": 0.6898,
    "utilization_after": 0.8880,
    "shortfall_steps": 6,
    "window": "2017-12-01 … 2017-12-14",
    "source": "a faithful re-run of the Helios artifact's CES on its Philly node series "
    "(philly_node_sequence.csv); its forecasts use data up to 2F − 6 steps after each decision",
}
DEFAULT_POWER = PowerModel()


PARAM_LABELS = {
    "history": "H, history (steps)",
    "future": "F, forecast reach (steps)",
    "his_th": "his_th, falling-demand threshold (nodes)",
    "fut_th": "fut_th, lower-forecast threshold (nodes)",
    "de_th": "de_th, smallest cut (nodes)",
    "buffer": "B, spare nodes kept on",
    "hold_off": "K, hold-off after a wake-up (steps)",
}


class ReportDirError(ValueError):
    """``out`` names something that is not a replay report and must not be replaced."""


REPORT_DIR = DirKind("energy report", REPORT_FILES, ReportDirError)
"""Replay reports as outputs (:mod:`dlsched.outdir`)."""


def write_report(out: str | Path, result: ReplayResult, force: bool = False) -> Path:
    """Write the report directory ``out`` atomically; an earlier report there is replaced only
    with ``force``.

    Raises :class:`ReportDirError` when ``out`` is a file, a symlink or a directory holding
    anything a report does not write. Needs matplotlib (``pip install 'dlsched[analysis]'``).
    """
    from dlsched.energy.figures import accuracy_figure, nodes_figure

    def fill(tmp: Path) -> None:
        nodes_figure(result).savefig(tmp / NODES_PNG)
        accuracy_figure(result).savefig(tmp / ACCURACY_PNG)
        stats = report_stats(result)
        (tmp / STATS).write_text(json.dumps(stats, indent=1, allow_nan=False) + "\n")
        (tmp / INDEX).write_text(render_html(result, stats), encoding="utf-8")

    return REPORT_DIR.write(out, fill, force)


def report_stats(result: ReplayResult) -> dict[str, Any]:
    """The JSON document of ``stats.json`` (NaN written as null)."""
    series, split, config = result.series, result.split, result.config
    summary = result.summary
    steps = result.test_steps
    forecaster = result.forecaster
    stats: dict[str, Any] = {
        "dlsched_energy_replay": STATS_VERSION,
        "input": {
            "source": series.source,
            "samples": series.samples,
            "sampling_interval_s": series.interval_s,
            "step_s": STEP_S,
            "steps": len(series),
            "first_step": series.label(0),
            "last_step": series.label(len(series) - 1),
            "wall_clock_times": series.origin_known,
            "gaps": [dataclasses.asdict(g) for g in series.gaps],
            "filled_steps": int(series.filled.sum()),
            "filled": [dataclasses.asdict(r) for r in series.filled_ranges()],
            "flags": None if forecaster.flags is None else forecaster.flags.source,
        },
        "preset": config.preset,
        "parameters": config.params.to_dict(),
        "window": {
            "evaluated": "test",
            "first_step": series.label(int(steps[0])),
            "last_step": series.label(int(steps[-1])),
            "steps": len(steps),
            "days": len(steps) / STEPS_PER_DAY,
        },
        "split": {"mode": result.split_mode, "rule": _split_rule(result)},
        "windows": {
            name: _window(result, lo, hi)
            for name, lo, hi in (
                ("train", 0, split.train_end),
                ("validation", split.train_end, split.valid_end),
                ("test", split.valid_end, split.test_end),
            )
        },
        **_summary_fields(summary),
        "forecast_rmse": result.accuracy.rmse,
        "forecast_smape": result.accuracy.smape,
        "baseline_forecast_rmse": result.baseline_accuracy.rmse,
        "baseline_forecast_smape": result.baseline_accuracy.smape,
        "persistence_forecast_rmse": result.persistence_accuracy.rmse,
        "persistence_forecast_smape": result.persistence_accuracy.smape,
        "forecast_pairs": result.accuracy.pairs,
        "forecast_by_horizon": [
            {
                "horizon_steps": h.horizon,
                "horizon_minutes": h.horizon * STEP_S // 60,
                "pairs": h.model.pairs,
                "model_rmse": h.model.rmse,
                "model_smape": h.model.smape,
                "baseline_rmse": h.baseline.rmse,
                "baseline_smape": h.baseline.smape,
                "persistence_rmse": h.persistence.rmse,
                "persistence_smape": h.persistence.smape,
            }
            for h in result.by_horizon
        ],
        "forecaster": {
            "model": "LightGBM, one direct model for horizons 1 … 2F (horizon as a feature)",
            "target": "change of busy nodes since the issuing step",
            "features": list(forecaster.features),
            "training_horizons": list(forecaster.horizons),
            "rounds": forecaster.best_iteration,
            "validation_rmse": forecaster.validation_rmse,
            "refit": "on training + validation rows with the early-stopped number of rounds",
            "lightgbm_params": config.forecast.lightgbm_params(),
            "max_rounds": config.forecast.max_rounds,
            "early_stopping_rounds": config.forecast.early_stopping_rounds,
            "baseline": "seasonal naive: same time of day on the latest day known at issue",
        },
        "energy": {
            "idle_power_w": config.power.idle_w,
            "busy_power_w": config.power.busy_w,
            "idle_power_source": IDLE_SOURCE
            if config.power.idle_w == DEFAULT_POWER.idle_w
            else "given with --idle-power-w",
            "busy_power_source": DGX1_SOURCE
            if config.power.busy_w == DEFAULT_POWER.busy_w
            else "given with --busy-power-w",
            "energy_before_kwh": summary.energy_before_kwh,
            "energy_after_kwh": summary.energy_after_kwh,
            "energy_saved_kwh": summary.energy_saved_kwh,
            "model": "saved = powered-off node-hours × idle power; boot and shutdown energy "
            "and cooling are not modelled",
        },
        "events": {
            "wake": result.outcome.count("wake"),
            "shrink": result.outcome.count("shrink"),
            "capacity": result.outcome.count("capacity"),
            "list": [
                {**dataclasses.asdict(e), "time": series.label(int(steps[e.step]))}
                for e in result.outcome.events
            ],
        },
        "reference_forecasts": {name: _summary_fields(s) for name, s in result.references.items()},
    }
    if config.preset == "philly":
        stats["published_reference"] = PUBLISHED_PHILLY
    safe: dict[str, Any] = _json_safe(stats)
    return safe


def render_html(result: ReplayResult, stats: dict[str, Any]) -> str:
    """The report page for ``result``; ``stats`` is its :func:`report_stats` document."""
    series, config, summary = result.series, result.config, result.summary
    preset = f" (preset {config.preset})" if config.preset else ""
    title = f"CES energy-saving replay{preset}: {Path(series.source).name}"
    window = stats["window"]
    published = stats.get("published_reference")
    head = ["measure", "this replay"] + (["published (Philly, Dec 1–14)"] if published else [])
    base = result.baseline_accuracy
    rows = [
        ("mean powered-off nodes", _num(summary.mean_powered_off_nodes, 1), "mean_powered_off"),
        ("node utilization before (busy / cluster)", _pct(summary.utilization_before), "before"),
        ("node utilization after (busy / powered on)", _pct(summary.utilization_after), "after"),
        ("shortfall steps (demand above nodes on)", f"{summary.shortfall_steps}", "shortfall"),
        ("shortfall node-steps", f"{summary.shortfall_node_steps}", None),
        ("wake-ups per day", _num(summary.wakeups_per_day, 2), None),
        ("shrinks per day", _num(summary.shrinks_per_day, 2), None),
        ("forecast RMSE, horizons 1…2F (nodes)", _num(result.accuracy.rmse, 2), None),
        ("forecast SMAPE, horizons 1…2F", f"{_num(result.accuracy.smape, 2)} %", None),
        (
            "baseline RMSE / SMAPE (seasonal naive)",
            f"{_num(base.rmse, 2)} / {_num(base.smape, 2)} %",
            None,
        ),
        ("energy saved", f"{summary.energy_saved_kwh:,.0f} kWh", None),
    ]
    keys = {
        "mean_powered_off": "mean_powered_off_nodes",
        "before": "utilization_before",
        "after": "utilization_after",
        "shortfall": "shortfall_steps",
    }
    table_rows = []
    for label, value, key in rows:
        cells = [label, value]
        if published:
            ref = published.get(keys[key]) if key else None
            cells.append(
                "" if ref is None else _pct(ref) if key in ("before", "after") else f"{ref}"
            )
        table_rows.append(cells)
    parts = [
        *page_start(title, CSS),
        _p(
            f"Evaluated over the test window, {window['first_step']} … {window['last_step']} "
            f"({window['steps']:,} ten-minute steps, {window['days']:.1f} days): the only window "
            "whose forecasts come from a model that never saw it. Every forecast the rule reads "
            "at a step was made from data up to that step."
        ),
        "<h2>Summary</h2>",
        _table(head, table_rows),
    ]
    if published:
        parts.append(
            _p(
                f"Published column: {published['source']}; window {published['window']}. "
                f"Method and parameters: {HELIOS_CITATION}."
            )
        )
    parts += [
        "<h2>Nodes over the test window</h2>",
        f'<figure><img src="{NODES_PNG}" alt="busy, forecast and powered-on nodes">'
        "<figcaption>Busy nodes (10-minute maxima), the forecast of each step made one hour "
        "before it, the nodes CES keeps powered on and the cluster's nodes; triangles mark "
        "shortfall steps. Bottom: powered-off nodes.</figcaption></figure>",
        "<h2>Forecast accuracy</h2>",
        _p(
            "RMSE in nodes and SMAPE in percent over every (issuing step, horizon) pair whose "
            "target lies in the test window, by horizon. The model predicts the change since the "
            "issuing step from the calendar, rolling statistics and lagged values (features "
            "listed in stats.json), all lagged by at least the horizon."
        ),
        _p(
            "One LightGBM model serves every horizon 1 … 2F (the horizon is a feature). A "
            "forecast for step i + h issued at step i reads the series up to step i only, so the "
            "rule never sees the future; the Helios artifact instead shifts its features by one "
            "hour and averages those predictions up to 2F steps ahead. Early stopping on the "
            f"validation window chose {result.forecaster.best_iteration} rounds (validation "
            f"RMSE {result.forecaster.validation_rmse:.2f} nodes); the model was then refit on "
            "training + validation."
        ),
        f'<figure><img src="{ACCURACY_PNG}" alt="forecast error by horizon"></figure>',
        _accuracy_table(result),
        "<h2>The rule with other forecasts</h2>",
        _p(
            "The same rule and window with a perfect forecast (the true future), persistence "
            "(no change) and the seasonal-naive baseline, to show what the forecaster earns. "
            "Persistence meets both forecast conditions with equality at every step, so the rule "
            "then shrinks whenever demand has just fallen; the model's small predicted changes, "
            "up or down, are what decide when it may."
        ),
        _references_table(result),
        "<h2>Parameters and input</h2>",
        _table(
            ["rule parameter", "value"],
            [[PARAM_LABELS[k], f"{v}"] for k, v in config.params.to_dict().items()],
        ),
        _input_html(stats),
        "<h2>Energy</h2>",
        _p(
            f"Energy saved = powered-off node-hours ({summary.powered_off_node_hours:,.0f}) × "
            f"idle power ({config.power.idle_w:,.0f} W) = {summary.energy_saved_kwh:,.0f} kWh; "
            f"the cluster would use {summary.energy_before_kwh:,.0f} kWh without CES and "
            f"{summary.energy_after_kwh:,.0f} kWh with it (busy nodes at "
            f"{config.power.busy_w:,.0f} W). Boot energy and cooling are not modelled."
        ),
        _p(f"Busy power: {stats['energy']['busy_power_source']}."),
        _p(f"Idle power: {stats['energy']['idle_power_source']}."),
        "<footer><p>CES (Cluster Energy Saving) follows "
        f"{_e(HELIOS_CITATION)}. Every number on this page is in "
        f'<a href="{STATS}">{STATS}</a>. Written by dlsched.</p></footer>',
        "</main></body></html>",
    ]
    return "\n".join(parts) + "\n"


def _summary_fields(summary: RuleSummary) -> dict[str, Any]:
    return dataclasses.asdict(summary)


def _split_rule(result: ReplayResult) -> str:
    spec = result.config.split
    if result.split_mode == "months":
        return (
            "by calendar months, as in Helios: test on the last month, validate on the month "
            "before, train on everything earlier"
        )
    if result.split_mode == "fractions":
        return (
            f"by steps: the first {spec.train_fraction:.0%} train, the next "
            f"{spec.valid_fraction:.0%} validate, the rest is the test window"
        )
    return f"at dates: validation from {spec.valid_start}, test from {spec.test_start}" + (
        f" to {spec.test_end}" if spec.test_end else ""
    )


def _window(result: ReplayResult, lo: int, hi: int) -> dict[str, Any]:
    series = result.series
    return {
        "first_step": series.label(lo),
        "last_step": series.label(hi - 1),
        "steps": hi - lo,
        "filled_steps": int(series.filled[lo:hi].sum()),
    }


def _accuracy_table(result: ReplayResult) -> str:
    wanted = set(reported_horizons(result.config.params))
    rows = []
    for h in result.by_horizon:
        if h.horizon not in wanted:
            continue
        rows.append(
            [
                _duration(h.horizon * STEP_S),
                f"{h.model.rmse:.2f} / {h.model.smape:.2f} %",
                f"{h.baseline.rmse:.2f} / {h.baseline.smape:.2f} %",
                f"{h.persistence.rmse:.2f} / {h.persistence.smape:.2f} %",
                f"{h.model.pairs:,}",
            ]
        )
    rows.append(
        [
            "all, 1 … 2F",
            f"{result.accuracy.rmse:.2f} / {result.accuracy.smape:.2f} %",
            f"{result.baseline_accuracy.rmse:.2f} / {result.baseline_accuracy.smape:.2f} %",
            f"{result.persistence_accuracy.rmse:.2f} / {result.persistence_accuracy.smape:.2f} %",
            f"{result.accuracy.pairs:,}",
        ]
    )
    head = ["horizon", "LightGBM RMSE / SMAPE", "seasonal naive", "persistence", "pairs"]
    return _table(head, rows)


def _references_table(result: ReplayResult) -> str:
    runs = {"LightGBM (this replay)": result.summary, **result.references}
    head = ["forecast", "powered off", "utilization after", "shortfall steps", "wake-ups / day"]
    rows = [
        [
            name.replace("_", " "),
            _num(s.mean_powered_off_nodes, 1),
            _pct(s.utilization_after),
            f"{s.shortfall_steps}",
            _num(s.wakeups_per_day, 2),
        ]
        for name, s in runs.items()
    ]
    return _table(head, rows)


def _input_html(stats: dict[str, Any]) -> str:
    inp = stats["input"]
    rows = [
        ["source", inp["source"]],
        ["samples, interval", f"{inp['samples']:,} rows, every {inp['sampling_interval_s']:g} s"],
        ["10-minute steps", f"{inp['steps']:,}: {inp['first_step']} … {inp['last_step']}"],
    ]
    rows.append(["split", stats["split"]["rule"]])
    for name, w in stats["windows"].items():
        rows.append([f"{name} window", f"{w['first_step']} … {w['last_step']} ({w['steps']:,})"])
    if not inp["wall_clock_times"]:
        rows.append(["times", "relative to the run's start, counted from 1970-01-01"])
    if inp["flags"]:
        rows.append(["holiday/deadline flags", inp["flags"]])
    filled = inp["filled"]
    if filled:
        spans = "; ".join(f"{r['first']} … {r['last']} ({r['steps']})" for r in filled[:10])
        more = f"; and {len(filled) - 10} more" if len(filled) > 10 else ""
        rows.append(
            [
                "forward-filled steps (--fill-gaps)",
                f"{inp['filled_steps']:,}: {spans}{more}",
            ]
        )
    return _table(["input", ""], rows)


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def _duration(seconds: int) -> str:
    return f"{seconds // 60} min" if seconds < 3600 else f"{seconds / 3600:g} h"


def _num(value: float, digits: int) -> str:
    return "n/a" if not math.isfinite(value) else f"{value:,.{digits}f}"


def _pct(value: float) -> str:
    return "n/a" if not math.isfinite(value) else f"{100 * value:.2f} %"


CSS = (
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#222;"
    "background:#fafafa}main{max-width:1100px;margin:0 auto;padding:1.5em}"
    "h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}"
    "table{border-collapse:collapse;margin:0.6em 0;font-size:0.92em;background:#fff}"
    "th,td{border:1px solid #ddd;padding:0.3em 0.6em;text-align:left}"
    "th{background:#f0f0f0}td:not(:first-child){font-variant-numeric:tabular-nums}"
    "figure{margin:0.8em 0}img{max-width:100%;height:auto;border:1px solid #eee}"
    "figcaption{font-size:0.88em;color:#555}footer{margin-top:2em;font-size:0.85em;color:#555}"
)
