"""Serving beside training on one cluster: SLO attainment against training JCT.

The Azure 2023 conversation trace (``--traces``; the bundled slice when absent) tiled into a
one-day pattern (mean 4 req/s, peak 3x the trough at 14:00) is served by autoscaled replicas of
llama2-70b on 8 A100s (fitted model; one replica's capacity at the SLO measured first), beside
the busiest day of the bundled Philly VC 0e4a51 slice, on a 16 x 8-GPU cluster. For each
autoscaler headroom and each policy (``serving-first`` preempts training for replicas;
``fifo`` queues them with the training jobs) it prints SLO attainment and TTFT p99, training
JCT, training preemptions, GPU utilization and energy of the shared run, as a Markdown table.

    python bench/serving_colocated.py [--traces ../shared/traces/inference/azure-llm-2023]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from dlsched.cluster.parse import resolve_cluster
from dlsched.serving.arrivals import day_pattern
from dlsched.serving.autoscale import Autoscaler
from dlsched.serving.bundled import bundled_requests_path
from dlsched.serving.colocated import measure_capacity, run_colocated, training_summary
from dlsched.serving.config import ReplicaConfig
from dlsched.serving.energy import serving_power
from dlsched.serving.hardware import GPUS, MODELS, kv_blocks
from dlsched.serving.metrics import Slo, serving_summary
from dlsched.serving.perf.deployment import deployment_model
from dlsched.serving.readers.read import read_requests
from dlsched.trace.bundled import bundled_trace_path
from dlsched.trace.read import read_trace
from dlsched.trace.transforms import time_window

DEFAULT_TRACES = Path(__file__).resolve().parents[1] / "../shared/traces/inference/azure-llm-2023"
DAY = 86_400.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    args = parser.parse_args()
    path = args.traces / "AzureLLMInferenceTrace_conv.csv"
    conv = read_requests(path if path.is_file() else bundled_requests_path("azure_conv_5000"))
    requests = day_pattern(conv.trace, span=DAY, mean_rate=4.0, seed=1)
    shape, gpu = MODELS["llama2-70b"], GPUS["a100-80gb"]
    model = deployment_model(shape.name, gpu.name, 8)
    config = ReplicaConfig("vllm", kv_blocks(shape.name, gpu.name, 8))
    power = serving_power(shape.name, gpu.name, 8)
    slo = Slo()
    capacity = measure_capacity(conv.trace, model, config, slo)
    philly = read_trace(str(bundled_trace_path("vc_0e4a51"))).trace
    submit = philly.table.column("submit_time").to_numpy()
    work = philly.table.column("duration").to_numpy() * philly.table.column("num_gpus").to_numpy()
    busiest = int(np.argmax(np.bincount((submit // DAY).astype(np.int64), weights=work)))
    training = time_window(philly, busiest * DAY, (busiest + 1) * DAY)
    print(
        f"{len(requests):,} requests over one day; one replica sustains {capacity:.2f} req/s at "
        f"the SLO (TTFT {slo.ttft} s, mean TBT {slo.tbt} s) for 90% of requests; training: "
        f"{len(training)} jobs of day {busiest} of VC 0e4a51; cluster 16x8\n"
    )
    print(
        "| headroom | policy | replica-windows | SLO attainment | TTFT p99 (s) | training "
        "avg JCT (h) | p95 JCT (h) | training preemptions | GPU util | energy (kWh) | "
        "busy-power energy (kWh) | wall (s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    cluster = resolve_cluster("16x8")
    for headroom in (1.0, 1.2, 1.5):
        scaler = Autoscaler(capacity, headroom=headroom)
        for policy in ("serving-first", "fifo"):
            started = time.perf_counter()
            run = run_colocated(requests, training, cluster, scaler, model, config, 8, policy)
            wall = time.perf_counter() - started
            s, t = serving_summary(run.serving, slo), training_summary(run, power)
            print(
                f"| {headroom:g} | {policy} | {t['replica_windows']} | "
                f"{s['slo_attainment']:.1%} | {s['ttft_s']['p99']:,.1f} | "
                f"{t['training_avg_jct_s'] / 3600:,.1f} | {t['training_p95_jct_s'] / 3600:,.1f} | "
                f"{t['training_preemptions']} | {t['gpu_utilization']:.1%} | "
                f"{t['energy_kwh']:,.0f} | {t['cluster_energy_kwh']:,.0f} | {wall:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
