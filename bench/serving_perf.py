"""Serving performance models against the bundled Splitwise measurements (perf_model.csv).

Prints, as Markdown tables for bench/RESULTS.md:
- the leave-one-out error (each measured point held out in turn and predicted from the rest of
  its deployment) of the ``fitted`` model (interpolated, :mod:`dlsched.serving.perf.interpolated`)
  and of the ``linear`` model before it, per regime (single-prompt prefill: batch-1 points;
  batched prefill: batch > 1; decode: every point), median and worst, per deployment and over
  all;
- the same errors by where the held-out point's knot (its prompt length, batch tokens or batch
  size) lies among the knots the rest of the deployment measures: measured again (``repeated``:
  the seven single-prompt rows of 512 tokens that differ in output length only), ``between``
  two (interpolation) or ``beyond`` them (extrapolation);
- the fitted model's largest error at the points it was fitted to (0 where it is exact);
- the roofline with phase efficiencies fitted to the other model's measurements.
Points faster than the roofline bound (not physically possible at the published peaks) are
listed and left out of everything.

    python bench/serving_perf.py
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence

from dlsched.serving.perf.evaluate import (
    REGIMES,
    Prediction,
    leave_one_out,
    predict,
    regime_errors,
    roofline_leave_one_model_out,
    split_by_roofline,
)
from dlsched.serving.perf.interpolated import fit_interpolated
from dlsched.serving.perf.linear import fit_linear
from dlsched.serving.perf.measured import PerfPoint, load_perf_points
from dlsched.serving.perf.model import IterationModel
from dlsched.serving.perf.roofline import fit_efficiencies

Fit = Callable[[Sequence[PerfPoint]], IterationModel]
GOAL = (0.05, 0.10)


def _cells(predictions: Sequence[Prediction]) -> str:
    errors = regime_errors(predictions)
    cells = []
    for regime in REGIMES:
        e = errors[regime]
        cells += [f"{statistics.median(e):.1%}", f"{max(e):.1%}"] if e else ["–", "–"]
    return " | ".join(cells)


def _table(title: str, predictions: Sequence[Prediction]) -> None:
    print(f"\n{title}\n")
    print(
        "| deployment | points | single prefill median | worst | batched prefill median | "
        "worst | decode median | worst |"
    )
    print("|---|---|---|---|---|---|---|---|")
    by_group: dict[tuple[str, str, int], list[Prediction]] = defaultdict(list)
    for p in predictions:
        by_group[p.point.group].append(p)
    for (model, gpu, tp), own in sorted(by_group.items()):
        print(f"| {model} {gpu} TP{tp} | {len(own)} | {_cells(own)} |")
    print(f"| **all** | {len(predictions)} | {_cells(predictions)} |")


PLACES = ("repeated", "between", "beyond")


def _place(value: int, measured: Sequence[int], floor: bool = False) -> str:
    """Where a held-out knot lies among the knots the rest measures: ``repeated`` (measured
    again), ``between`` two, or ``beyond`` them (below the smallest only unless ``floor``: a
    curve that starts from a knot of another regime)."""
    if value in measured:
        return "repeated"
    low = not floor and (not measured or value < min(measured))
    return "beyond" if low or not measured or value > max(measured) else "between"


def _places(prediction: Prediction, group: Sequence[PerfPoint]) -> tuple[str, str]:
    """Where the held-out point's prefill and decode lie among the rest's knots."""
    p = prediction.point
    others = [q for q in group if q is not p]
    if p.batch == 1:
        prefill = _place(p.prompt, [q.prompt for q in others if q.batch == 1])
    else:
        # Batched prefill is a curve over batch tokens that starts from the single prompts.
        batched = [q.batch * q.prompt for q in others if q.batch > 1]
        prefill = _place(p.batch * p.prompt, batched, floor=True)
    return prefill, _place(p.batch, [q.batch for q in others])


def _split_table(predictions: Sequence[Prediction], points: Sequence[PerfPoint]) -> None:
    errors: dict[tuple[str, str], list[float]] = defaultdict(list)
    for prediction in predictions:
        group = [q for q in points if q.group == prediction.point.group]
        prefill_place, decode_place = _places(prediction, group)
        regime = REGIMES[0] if prediction.point.batch == 1 else REGIMES[1]
        errors[regime, prefill_place].append(prediction.prefill_error)
        errors[REGIMES[2], decode_place].append(prediction.decode_error)
    head = " | ".join(f"{place}: points | median | worst" for place in PLACES)
    print(f"\n| regime | {head} |")
    print("|---|" + "---|" * 3 * len(PLACES))
    for regime in REGIMES:
        row = [regime]
        for place in PLACES:
            e = errors[regime, place]
            row += (
                [str(len(e)), f"{statistics.median(e):.1%}", f"{max(e):.1%}"]
                if e
                else ["0", "–", "–"]
            )
        print("| " + " | ".join(row) + " |")


def _in_sample(points: Sequence[PerfPoint]) -> None:
    worst = dict.fromkeys(REGIMES, 0.0)
    for group in sorted({p.group for p in points}):
        own = [p for p in points if p.group == group]
        model = fit_interpolated(own)
        for regime, errors in regime_errors([predict(model, p) for p in own]).items():
            worst[regime] = max([worst[regime], *errors])
    figures = ", ".join(f"{r} {v:.1%}" for r, v in worst.items())
    print(f"\nFitted model at the points it was fitted to, largest error: {figures}")


def main() -> None:
    kept, below = split_by_roofline(load_perf_points())
    print("Left out (faster than the roofline bound):")
    for p in below:
        print(
            f"  {p.model} {p.gpu} TP{p.tp} batch {p.batch} prompt {p.prompt}: prefill "
            f"{p.prefill_s * 1e3:.0f} ms"
        )
    prefill_eff, decode_eff = fit_efficiencies(kept)
    print(
        f"Roofline efficiencies fitted to all points: prefill {prefill_eff:.2f}, "
        f"decode {decode_eff:.2f}"
    )
    fitted = leave_one_out(kept, fit_interpolated)
    _table("Leave one out, `fitted` (interpolated) model:", fitted)
    _table("Leave one out, `linear` model (before):", leave_one_out(kept, fit_linear))
    print(
        "\nLeave one out, `fitted` model, by where the held-out point's knot (prompt length, "
        "batch tokens, batch size) lies among the rest's:"
    )
    _split_table(fitted, kept)
    _in_sample(kept)
    _table(
        "Roofline, efficiencies fitted to the other model's points:",
        roofline_leave_one_model_out(kept),
    )
    errors = regime_errors(fitted)
    misses = [
        r for r in REGIMES if statistics.median(errors[r]) > GOAL[0] or max(errors[r]) > GOAL[1]
    ]
    print(
        f"\nGoal (median <= {GOAL[0]:.0%}, worst <= {GOAL[1]:.0%}) missed by: "
        f"{', '.join(misses) or 'none'}"
    )


if __name__ == "__main__":
    main()
