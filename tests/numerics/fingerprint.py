"""Print the exact results of dlsched's fits and of simulations that use them, as JSON.

``python -m tests.numerics.fingerprint [--fits]`` prints one JSON object: per case either the
fitted parameters as hexadecimal floats or a digest of a run's whole job table and summary
(wall-clock fields left out). ``test_cross_cpu.py`` runs it under several OpenBLAS kernels and
NumPy dispatch levels and requires the same object from each: what a fit returns, and every
decision made from it, must not depend on the CPU.

Cases: the Optimus PS-speed and loss-curve fits, the Pollux throughput fit of every bundled
profile, the serving iteration-time fits (linear and interpolated), the elastic policies that
use them on the first 40 jobs of the bundled Pollux workload 6, the PS policies on a small PS
workload, QSSF with the learned duration estimator, a synthetic Venus-like trace, a serving
run and the CES power manager on the Helios Philly preset (about a minute in all); with
``--fits``, the fits only (a few seconds).
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from dlsched.cluster.parse import resolve_cluster
from dlsched.perf.optimus import fit_loss_curve, fit_ps_speed, loss_from_metric
from dlsched.perf.pollux_fit import fit_pollux
from dlsched.perf.profiles import APPLICATIONS, SOURCE_VARIANTS, load_profile
from dlsched.serving.perf.interpolated import fit_interpolated
from dlsched.serving.perf.linear import fit_linear
from dlsched.serving.perf.measured import load_perf_points
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import simulate
from dlsched.trace.bundled import bundled_trace_path
from dlsched.trace.read import read_trace
from dlsched.trace.schema import Trace

ELASTIC = (
    ("optimus", {}),
    ("optimus", {"remaining": "epochs"}),
    ("optimus", {"speed": "profile"}),
    ("pollux", {}),
    ("ones", {}),
    ("gavel", {}),
    ("themis", {}),
)


def hexes(values: Any) -> list[str]:
    return [float(v).hex() for v in values]


def exact(value: Any) -> Any:
    """``value`` with every float as hexadecimal text, so a digest sees every bit."""
    if isinstance(value, float):
        return value.hex()
    if isinstance(value, dict):
        return {k: exact(v) for k, v in sorted(value.items()) if "wall" not in k}
    if isinstance(value, list | tuple):
        return [exact(v) for v in value]
    return value


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(exact(value), sort_keys=True).encode()).hexdigest()[:20]


def fits() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for bsz, wiggle in ((64.0, math.sin), (512.0, math.cos)):
        samples = [
            (w, w, 1.0 / (0.03 * bsz / w + 0.28 + 0.05 * w + 1e-3 * wiggle(w)))
            for w in (1, 2, 4, 8, 16)
        ]
        model = fit_ps_speed(samples, bsz)
        out[f"ps-speed/{bsz:g}"] = hexes([model(n, n) for n in range(1, 33)])
    for app in APPLICATIONS:
        for curve in load_profile(app).validation[:2]:
            losses = loss_from_metric(app, curve.metric)
            steps = [1000.0 * i for i in range(1, len(losses) + 1)]
            for n in (3, 6, len(losses)):
                if n <= len(losses) and n >= 3:
                    c = fit_loss_curve(steps[:n], losses[:n])
                    out[f"loss/{app}/{curve.global_bsz}/{n}"] = hexes([c.beta0, c.beta1, c.beta2])
        for variant in sorted({v for vs in SOURCE_VARIANTS.values() for v in vs}):
            try:
                profile = load_profile(app, variant)
            except (ValueError, FileNotFoundError):
                continue
            p = fit_pollux(profile.samples)
            out[f"pollux/{app}/{variant}"] = hexes(
                [p.alpha_c, p.beta_c, p.alpha_r, p.beta_r, p.alpha_n, p.beta_n, p.gamma]
            )
    points = load_perf_points()
    for group in sorted({p.group for p in points}):
        own = [p for p in points if p.group == group]
        if len(own) >= 3:
            m = fit_linear(own)
            out[f"serving/{'/'.join(map(str, group))}"] = hexes(
                [m.p0, m.p1, m.p2, m.d0, m.d1, m.d2]
            )
            f = fit_interpolated(own)
            curves = [f.tokens, f.decode, f.batching] + ([f.batched] if f.batched else [])
            times = [
                f.iteration_time(t, t * (t + 1) / 2, n, b, b * 700)
                for t, n, b in ((0, 0, 1), (100, 1, 0), (3000, 1, 5), (9000, 3, 70), (40000, 9, 0))
            ]
            out[f"serving-interpolated/{'/'.join(map(str, group))}"] = hexes(
                [v for c in curves for v in (*c.ys, *c.ratios, *c.powers, c.fixed, c.slope)]
                + [f.pair_s, f.context_s, f.shared_s, *times]
            )
    return out


def run(trace: Trace, cluster: str, config: SimConfig) -> str:
    result = simulate(trace, resolve_cluster(cluster), config)
    return digest([result.jobs.to_pylist(), result.summary])


def simulations() -> dict[str, Any]:
    out: dict[str, Any] = {}
    workload = read_trace(bundled_trace_path("pollux_workload-6")).trace
    head = Trace(workload.table.slice(0, 40), workload.source)
    for policy, options in ELASTIC:
        config = SimConfig(policy=policy, policy_options=dict(options), seed=0)
        out[f"sim/{policy}/{options}"] = run(head, "pollux", config)
    from dlsched.ps.machines import uniform_machines
    from dlsched.ps.workload import build_workload, workload_trace

    machines = uniform_machines(4, gpus=4)
    ps = workload_trace(build_workload(24, machines, seed=0, time_scale=0.01))
    for policy in ("optimus", "smd"):
        out[f"sim/ps/{policy}"] = run(ps, "4x4", SimConfig(policy=policy))
    rigid = read_trace(bundled_trace_path("vc_0e4a51")).trace
    rigid = Trace(rigid.table.slice(0, 400), rigid.source)
    out["sim/qssf/lgbm"] = run(rigid, "32x8", SimConfig(policy="qssf", estimator="lgbm"))
    out.update(commands())
    return out


def commands() -> dict[str, Any]:
    from typer.testing import CliRunner

    from dlsched.cli.main import app

    out: dict[str, Any] = {}
    runner = CliRunner()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cases: list[tuple[str, list[str], Callable[[Path], Any]]] = [
            (
                "synth/venus",
                ["trace", "synth", "--like", "venus", "--days", "2", "--seed", "0"],
                lambda d: pq.read_table(d / "trace.parquet").to_pylist(),
            ),
            (
                "serve-sim/azure_conv_5000",
                ["serve-sim", "azure_conv_5000", "--replicas", "2"],
                lambda d: json.loads((d / "summary.json").read_text()),
            ),
            (
                "sim/ces",
                ["simulate", "--preset", "helios-philly", "--power-manager", "ces"],
                lambda d: [
                    pq.read_table(d / "jobs.parquet").to_pylist(),
                    json.loads((d / "summary.json").read_text()),
                ],
            ),
        ]
        for name, argv, read in cases:
            where = root / name.replace("/", "-")
            result = runner.invoke(app, [*argv, "--out", str(where)])
            if result.exit_code != 0:
                raise SystemExit(f"{name}: exit {result.exit_code}: {result.output[-2000:]}")
            out[name] = digest(read(where))
    return out


def main() -> None:
    out = fits() if "--fits" in sys.argv[1:] else {**fits(), **simulations()}
    json.dump(out, sys.stdout, indent=0, sort_keys=True)


if __name__ == "__main__":
    main()
