"""``dlsched perf``: performance models fitted to the bundled training profiles."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import typer

from dlsched.cli.errors import user_errors
from dlsched.perf.pollux_fit import FitReport, fit_profile
from dlsched.perf.profiles import APPLICATIONS, SOURCE_VARIANTS, VARIANTS, load_profile

perf_app = typer.Typer(
    help="Performance models fitted to measured training profiles.", no_args_is_help=True
)

_HEADER = (
    f"{'app':<12} {'variant':<8} {'gpu':<9} {'α_c ms':>8} {'β_c ms':>9} {'α_r ms':>8} "
    f"{'β_r ms':>8} {'α_n ms':>8} {'β_n ms':>8} {'γ':>5} {'train':>5} {'test':>5} "
    f"{'trainMRE':>8} {'testMRE':>8} {'testMax':>8} {'RMSE ms':>8}"
)


@perf_app.command("fit")
def fit(
    app: Annotated[
        str | None, typer.Option("--app", help=f"One of {', '.join(APPLICATIONS)} (default: all).")
    ] = None,
    profiles: Annotated[
        str,
        typer.Option("--profiles", help="pollux (the T4 testbed) or sia (every GPU type)."),
    ] = "pollux",
    holdout_every: Annotated[
        int, typer.Option(help="Hold out every k-th distinct configuration for scoring.")
    ] = 5,
) -> None:
    """Fit the Pollux throughput model to each application's step times per GPU type; print
    the parameters (milliseconds; β per example or per replica), the training error and the
    error on held-out configurations (MRE: mean relative error, Max: largest)."""
    with user_errors():
        apps = _applications(app)
        variants = _variants(profiles)
        reports = [fit_profile(load_profile(a, v), holdout_every) for a in apps for v in variants]
    typer.echo(render_fit_table(reports))


def render_fit_table(reports: Sequence[FitReport]) -> str:
    """One line per fit, under a header."""
    lines = [_HEADER]
    for r in reports:
        p = r.params
        lines.append(
            f"{r.app:<12} {r.variant:<8} {VARIANTS[r.variant].gpu_type:<9} "
            f"{p.alpha_c * 1e3:8.3f} {p.beta_c * 1e3:9.5f} {p.alpha_r * 1e3:8.3f} "
            f"{p.beta_r * 1e3:8.3f} {p.alpha_n * 1e3:8.3f} {p.beta_n * 1e3:8.3f} "
            f"{p.gamma:5.2f} {r.train_rows:5d} {r.test_rows:5d} {r.train_mre:8.1%} "
            f"{r.test_mre:8.1%} {r.test_max_re:8.1%} {r.test_rmse * 1e3:8.2f}"
        )
    return "\n".join(lines)


def _applications(app: str | None) -> tuple[str, ...]:
    if app is None:
        return APPLICATIONS
    if app not in APPLICATIONS:
        raise ValueError(f"unknown application {app!r}; known: {', '.join(APPLICATIONS)}")
    return (app,)


def _variants(profiles: str) -> tuple[str, ...]:
    if profiles not in SOURCE_VARIANTS:
        raise ValueError(f"unknown profiles {profiles!r}; known: {', '.join(SOURCE_VARIANTS)}")
    return SOURCE_VARIANTS[profiles]
