"""``dlsched energy``: the offline CES (Cluster Energy Saving) service of Helios."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dlsched.cli.errors import user_errors
from dlsched.cli.options import ForceOpt
from dlsched.energy.features import Flags, load_flags
from dlsched.energy.forecast import ForecastConfig
from dlsched.energy.power_rule import RuleParams
from dlsched.energy.presets import PRESET_NAMES, get_preset
from dlsched.energy.replay import PowerModel, ReplayConfig, SplitMode, SplitSpec, replay
from dlsched.energy.report import REPORT_DIR, write_report
from dlsched.energy.series import (
    BUNDLED,
    BusySeries,
    bundled_series_path,
    load_series,
    series_from_run,
)
from dlsched.extras import require
from dlsched.trace.walltime import parse_date_or_time

energy_app = typer.Typer(
    help="Cluster energy saving (CES): forecast busy nodes and power idle ones off.",
    no_args_is_help=True,
)
DEFAULTS = PowerModel()
RULE_OPTIONS = {
    "history": "--history",
    "future": "--future",
    "his_th": "--his-th",
    "fut_th": "--fut-th",
    "de_th": "--de-th",
    "buffer": "--buffer",
    "hold_off": "--hold-off",
}


@energy_app.command("replay")
def replay_cmd(
    series: Annotated[
        str | None,
        typer.Argument(
            help="Busy-nodes CSV (time, active, total), or a bundled series name "
            f"({', '.join(BUNDLED)}). Leave out with --from-run."
        ),
    ] = None,
    *,
    out: Annotated[Path, typer.Option(help="Report directory to write (atomically).")],
    preset: Annotated[
        str | None,
        typer.Option(help=f"Published rule parameters: {', '.join(PRESET_NAMES)}."),
    ] = None,
    history: Annotated[int | None, typer.Option(help="H: history steps.")] = None,
    future: Annotated[int | None, typer.Option(help="F: forecast steps.")] = None,
    his_th: Annotated[float | None, typer.Option(help="Falling-demand threshold (nodes).")] = None,
    fut_th: Annotated[float | None, typer.Option(help="Lower-forecast threshold (nodes).")] = None,
    de_th: Annotated[int | None, typer.Option(help="Smallest cut (nodes).")] = None,
    buffer: Annotated[int | None, typer.Option(help="B: spare nodes kept on.")] = None,
    hold_off: Annotated[
        int | None, typer.Option(help="K: steps without shrinking after a wake.")
    ] = None,
    from_run: Annotated[
        Path | None,
        typer.Option(help="Derive the series from this simulator run's timeline.parquet."),
    ] = None,
    gpus_per_node: Annotated[int, typer.Option(help="GPUs per node (with --from-run).")] = 8,
    origin: Annotated[
        str | None,
        typer.Option(help="Wall-clock time of the run's time 0, YYYY-MM-DD[ HH:MM:SS] (UTC)."),
    ] = None,
    fill_gaps: Annotated[
        bool, typer.Option(help="Forward-fill missing steps (listed in stats.json).")
    ] = False,
    flags: Annotated[
        Path | None, typer.Option(help="Holiday/deadline flags CSV: date,holiday,deadline.")
    ] = None,
    split: Annotated[
        str,
        typer.Option(
            help="Windows: months (test on the last calendar month, validate on the one "
            "before), fractions, or auto (months if the series spans three, else fractions)."
        ),
    ] = "auto",
    train_fraction: Annotated[
        float | None, typer.Option(help="Share of steps to train on (fractions; 0.6).")
    ] = None,
    valid_fraction: Annotated[
        float | None, typer.Option(help="Share of steps to validate on (fractions; 0.2).")
    ] = None,
    valid_start: Annotated[str | None, typer.Option(help="Validation starts (date).")] = None,
    test_start: Annotated[str | None, typer.Option(help="Test window starts (date).")] = None,
    test_end: Annotated[str | None, typer.Option(help="Test window ends, exclusive.")] = None,
    idle_power_w: Annotated[
        float, typer.Option(help="Power of an idle node (W); default: half a DGX-1's peak.")
    ] = DEFAULTS.idle_w,
    busy_power_w: Annotated[
        float, typer.Option(help="Power of a busy node (W); default: a DGX-1's peak.")
    ] = DEFAULTS.busy_w,
    seed: Annotated[int, typer.Option(help="LightGBM seed.")] = 0,
    threads: Annotated[int, typer.Option(help="LightGBM threads (results depend on it).")] = 1,
    force: ForceOpt = False,
) -> None:
    """Replay the CES service on a busy-nodes series: train a forecaster on its first part,
    apply the power rule over its test window, and write stats.json, index.html and PNG
    figures to --out."""
    require("dlsched energy replay", "predict", "analysis")
    with user_errors():
        inputs = [p for p in (series, from_run, flags) if p is not None]
        REPORT_DIR.check(out, force, inputs=inputs)
        overrides = {
            "history": history,
            "future": future,
            "his_th": his_th,
            "fut_th": fut_th,
            "de_th": de_th,
            "buffer": buffer,
            "hold_off": hold_off,
        }
        params = rule_params(preset, overrides)
        busy = _read_series(series, from_run, gpus_per_node, origin, fill_gaps)
        flag_table: Flags | None = None if flags is None else load_flags(flags)
        config = ReplayConfig(
            params=params,
            preset=None if preset is None else preset.lower(),
            split=split_spec(
                split, train_fraction, valid_fraction, valid_start, test_start, test_end
            ),
            forecast=ForecastConfig(seed=seed, num_threads=threads),
            power=PowerModel(idle_power_w, busy_power_w),
        )
        result = replay(busy, config, flag_table)
        write_report(out, result, force)
    s = result.summary
    first, last = busy.label(int(result.test_steps[0])), busy.label(int(result.test_steps[-1]))
    typer.echo(
        f"{busy.source}: {len(busy):,} ten-minute steps; test window {first} … {last}: "
        f"{s.mean_powered_off_nodes:.1f} of {int(busy.total[result.test_steps].max())} nodes "
        f"powered off on average, utilization {100 * s.utilization_before:.2f}% → "
        f"{100 * s.utilization_after:.2f}%, {s.shortfall_steps} shortfall steps, "
        f"{s.energy_saved_kwh:,.0f} kWh saved; forecast SMAPE {result.accuracy.smape:.2f}% "
        f"against the baselines' seasonal naive {result.baseline_accuracy.smape:.2f}% "
        f"({result.references['seasonal_naive'].shortfall_steps} shortfall steps under the "
        f"same rule) and persistence {result.persistence_accuracy.smape:.2f}% "
        f"({result.references['persistence'].shortfall_steps} shortfall steps); "
        f"wrote {out / 'index.html'}"
    )
    if busy.gaps:
        typer.echo(
            f"filled {int(busy.filled.sum())} missing ten-minute steps over {len(busy.gaps)} "
            "gap(s) by forward fill (listed in stats.json)",
            err=True,
        )


def rule_params(preset: str | None, overrides: dict[str, float | int | None]) -> RuleParams:
    """The preset's parameters with every given override applied; without a preset all seven
    must be given. ValueError naming the missing options or the unknown preset."""
    values = {} if preset is None else get_preset(preset).to_dict()
    values.update({k: v for k, v in overrides.items() if v is not None})
    absent = [RULE_OPTIONS[k] for k in RULE_OPTIONS if k not in values]
    if absent:
        raise ValueError(
            f"without --preset ({', '.join(PRESET_NAMES)}) every rule parameter is needed; "
            f"missing {', '.join(absent)}"
        )
    return RuleParams(
        history=int(values["history"]),
        future=int(values["future"]),
        his_th=float(values["his_th"]),
        fut_th=float(values["fut_th"]),
        de_th=int(values["de_th"]),
        buffer=int(values["buffer"]),
        hold_off=int(values["hold_off"]),
    )


def split_spec(
    mode: str,
    train_fraction: float | None,
    valid_fraction: float | None,
    valid_start: str | None,
    test_start: str | None,
    test_end: str | None,
) -> SplitSpec:
    """The split the options ask for: dates when any date is given, fractions when a fraction
    is, else ``mode``. ValueError when they contradict each other or ``mode`` is unknown."""
    modes: dict[str, SplitMode] = {"auto": "auto", "months": "months", "fractions": "fractions"}
    if mode not in modes:
        raise ValueError(f"--split must be one of {', '.join(modes)}, got {mode!r}")
    dated = any(d is not None for d in (valid_start, test_start, test_end))
    fractions = train_fraction is not None or valid_fraction is not None
    if dated and (fractions or mode != "auto"):
        raise ValueError("give either dates (--valid-start, --test-start) or --split/fractions")
    if fractions and mode == "months":
        raise ValueError("--train-fraction and --valid-fraction need --split fractions")
    defaults = SplitSpec()
    return SplitSpec(
        mode="dates" if dated else "fractions" if fractions else modes[mode],
        train_fraction=defaults.train_fraction if train_fraction is None else train_fraction,
        valid_fraction=defaults.valid_fraction if valid_fraction is None else valid_fraction,
        valid_start=valid_start,
        test_start=test_start,
        test_end=test_end,
    )


def _read_series(
    series: str | None,
    from_run: Path | None,
    gpus_per_node: int,
    origin: str | None,
    fill_gaps: bool,
) -> BusySeries:
    if (series is None) == (from_run is None):
        raise ValueError("give either a SERIES file (or bundled name) or --from-run DIR")
    if from_run is not None:
        origin_s = None if origin is None else parse_date_or_time(origin)
        return series_from_run(
            from_run, gpus_per_node=gpus_per_node, origin_s=origin_s, fill_gaps=fill_gaps
        )
    if origin is not None:
        raise ValueError("--origin applies to --from-run only (a series file has wall times)")
    path = Path(str(series)).expanduser()
    if not path.exists() and series in BUNDLED:
        path = bundled_series_path(series)
    return load_series(path, fill_gaps=fill_gaps)
