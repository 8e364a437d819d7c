"""Serving performance models against the bundled Splitwise measurements (perf_model.csv).

Prints, per deployment (model, GPU, TP) and over all, the relative error of
- the linear model fitted to the deployment, leave one batch size out (held-out error), and
- the roofline with phase efficiencies fitted to the other model's measurements,
as Markdown tables for bench/RESULTS.md. Points faster than the roofline bound (not physically
possible at the published peaks) are listed and left out of both.

    python bench/serving_perf.py
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from dlsched.serving.perf.evaluate import (
    Prediction,
    leave_one_batch_size_out,
    roofline_leave_one_model_out,
    split_by_roofline,
    summarize,
)
from dlsched.serving.perf.measured import load_perf_points
from dlsched.serving.perf.roofline import fit_efficiencies


def _row(label: str, fitted: Sequence[Prediction], roof: Sequence[Prediction]) -> str:
    f, r = summarize(fitted), summarize(roof)
    return (
        f"| {label} | {f.count} | {f.prefill_mean:.1%} | {f.prefill_max:.1%} | "
        f"{f.decode_mean:.1%} | {f.decode_max:.1%} | {r.prefill_mean:.1%} | "
        f"{r.decode_mean:.1%} |"
    )


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
        f"decode {decode_eff:.2f}\n"
    )
    fitted = leave_one_batch_size_out(kept)
    roof = roofline_leave_one_model_out(kept)
    by_group: dict[tuple[str, str, int], tuple[list[Prediction], list[Prediction]]]
    by_group = defaultdict(lambda: ([], []))
    for p in fitted:
        by_group[p.point.group][0].append(p)
    for p in roof:
        by_group[p.point.group][1].append(p)
    print(
        "| deployment | points | fitted prefill mean | max | fitted decode mean | max | "
        "roofline prefill mean | roofline decode mean |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for (model, gpu, tp), (f, r) in sorted(by_group.items()):
        print(_row(f"{model} {gpu} TP{tp}", f, r))
    print(_row("**all**", fitted, roof))
    print("\n| held-out batch size | fitted prefill mean | fitted decode mean |\n|---|---|---|")
    for batch in sorted({p.point.batch for p in fitted}):
        s = summarize([p for p in fitted if p.point.batch == batch])
        print(f"| {batch} | {s.prefill_mean:.1%} | {s.decode_mean:.1%} |")


if __name__ == "__main__":
    main()
