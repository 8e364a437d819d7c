"""Figures of a CES replay, each a new :class:`matplotlib.figure.Figure` on an Agg canvas
(pyplot's global state is never touched)."""

from __future__ import annotations

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from dlsched.energy.replay import ReplayResult
from dlsched.energy.series import STEP_S

DPI = 110
BUSY, FORECAST, ON, TOTAL, SHORT = "#222222", "#DD8452", "#4C72B0", "#8C8C8C", "#C44E52"
BASELINE, PERSIST = "#55A868", "#8172B3"


def nodes_figure(result: ReplayResult) -> Figure:
    """Busy, forecast (1 h ahead) and powered-on nodes over the test window, the cluster's
    size and the shortfall steps (top); powered-off nodes with their mean (bottom)."""
    figure = Figure(figsize=(11.0, 5.6), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    top, bottom = figure.subplots(2, 1, sharex=True, height_ratios=(3, 1.3))
    series, steps = result.series, result.test_steps
    x, xlabel = _time_axis(result, steps)
    busy = series.busy[steps]
    total = series.total[steps]
    on = result.outcome.powered_on
    top.step(x, total, where="post", color=TOTAL, lw=1.0, ls="--", label="cluster nodes")
    top.step(x, on, where="post", color=ON, lw=1.4, label="powered on (CES)")
    top.step(x, busy, where="post", color=BUSY, lw=0.8, label="busy (10-min max)")
    top.plot(
        x, result.hour_ahead, color=FORECAST, lw=0.8, alpha=0.9, label="forecast made 1 h before"
    )
    wake = [e.step for e in result.outcome.events if e.kind == "wake"]
    if wake:
        top.plot(
            x[wake],
            busy[wake],
            ls="none",
            marker="v",
            ms=7,
            color=SHORT,
            label=f"shortfall ({len(wake)} steps)",
        )
    # A rare near-empty step (an outage) would stretch the axis to 0 and flatten the rest;
    # the axis starts near the low percentile instead and the text names what lies below it.
    low = max(0.0, float(np.percentile(busy, 0.5)) - 40)
    below = busy < low
    if below.any():
        k = int(np.argmin(busy))
        top.text(
            0.995,
            0.03,
            f"{_steps(int(below.sum()))} below the axis; lowest: {int(busy[k])} busy nodes at "
            f"{series.label(int(steps[k]))}",
            transform=top.transAxes,
            ha="right",
            fontsize=8,
            color="#555555",
        )
    top.set_ylim(low, float(total.max()) * 1.03)
    top.set_ylabel("nodes")
    top.grid(True, alpha=0.3)
    top.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=5, fontsize=8, frameon=False)
    params = result.config.params
    name = f"preset {result.config.preset}, " if result.config.preset else ""
    figure.suptitle(
        f"CES replay over the test window ({name}H={params.history}, F={params.future}, "
        f"B={params.buffer}, K={params.hold_off})",
        fontsize=11,
    )
    off = total - on
    bottom.fill_between(x, 0, off, step="post", color=ON, alpha=0.3, lw=0)
    mean = result.summary.mean_powered_off_nodes
    bottom.axhline(mean, color=ON, lw=1.2, ls="--", label=f"mean {mean:.1f} nodes")
    bottom.set_ylim(0, max(float(off.max()), 1.0) * 1.15)
    bottom.set_ylabel("powered off\n(nodes)")
    bottom.set_xlabel(xlabel)
    bottom.grid(True, alpha=0.3)
    bottom.legend(loc="upper right", fontsize=8)
    return figure


def accuracy_figure(result: ReplayResult) -> Figure:
    """RMSE (left) and SMAPE (right) of the test-window forecasts by horizon, for the model,
    the seasonal-naive baseline and persistence."""
    figure = Figure(figsize=(11.0, 3.8), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    left, right = figure.subplots(1, 2)
    hours = np.array([h.horizon for h in result.by_horizon]) * STEP_S / 3600
    for ax, metric, unit in ((left, "rmse", "RMSE (nodes)"), (right, "smape", "SMAPE (%)")):
        for label, attr, color in (
            ("LightGBM (this model)", "model", FORECAST),
            ("seasonal naive (same time yesterday)", "baseline", BASELINE),
            ("persistence (last value)", "persistence", PERSIST),
        ):
            values = [getattr(getattr(h, attr), metric) for h in result.by_horizon]
            ax.plot(hours, values, color=color, lw=1.4, label=label)
        ax.set_xlabel("forecast horizon (hours ahead of the issuing step)")
        ax.set_ylabel(unit)
        ax.set_ylim(bottom=0)
        ax.set_xlim(0, float(hours.max()))
        ax.grid(True, alpha=0.3)
    left.set_title("Forecast error on the test window: RMSE", fontsize=11)
    right.set_title("Forecast error on the test window: SMAPE", fontsize=11)
    right.legend(loc="lower right", fontsize=8)
    return figure


def _steps(count: int) -> str:
    return "1 step" if count == 1 else f"{count} steps"


def _time_axis(result: ReplayResult, steps: np.ndarray) -> tuple[np.ndarray, str]:
    series = result.series
    if series.origin_known:
        stamps = (series.start_s + STEP_S * steps).astype("datetime64[s]").astype("datetime64[ms]")
        return stamps, "date (wall-clock time of the series)"
    return series.start_s / 86_400 + steps * STEP_S / 86_400, "time since the run's start (days)"
