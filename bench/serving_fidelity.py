"""Serving fidelity: the published direction of static vs continuous batching (Orca, vLLM)
and of chunked prefill (Sarathi-Serve), on the Azure LLM 2023 traces with llama2-70b, TP 8.

Each cell serves the whole trace (``--traces``: the folder of the shared Azure traces; the
bundled slices when it is absent) on 4 replicas (round robin) at arrival rates scaled by each
load factor, with the performance model fitted to the measured points of that GPU. Prints a
Markdown table for bench/RESULTS.md and the wall time of each simulation.

    python bench/serving_fidelity.py [--traces ../shared/traces/inference/azure-llm-2023]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from dlsched.serving.arrivals import scale_rate
from dlsched.serving.bundled import bundled_requests_path
from dlsched.serving.cluster import simulate_serving
from dlsched.serving.config import SCHEDULERS, ReplicaConfig
from dlsched.serving.hardware import kv_blocks
from dlsched.serving.metrics import Slo, serving_summary
from dlsched.serving.perf.deployment import deployment_model
from dlsched.serving.readers.read import read_requests
from dlsched.serving.requests import RequestTrace

DEFAULT_TRACES = Path(__file__).resolve().parents[1] / "../shared/traces/inference/azure-llm-2023"
MODEL = "llama2-70b"
TP = 8
REPLICAS = 4


def traces(folder: Path) -> dict[str, RequestTrace]:
    """The code and conversation traces: whole from ``folder``, else the bundled slices."""
    out = {}
    for name, bundled in (("code", "azure_code_3000"), ("conv", "azure_conv_5000")):
        path = folder / f"AzureLLMInferenceTrace_{name}.csv"
        source = path if path.is_file() else bundled_requests_path(bundled)
        out[name] = read_requests(source).trace
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--loads", default="0.5,1,2")
    args = parser.parse_args()
    loads = [float(x) for x in args.loads.split(",")]
    slo = Slo()
    print(f"SLO: TTFT {slo.ttft} s, mean TBT {slo.tbt} s; {REPLICAS} replicas of {MODEL} TP{TP}")
    print(
        "\n| trace | GPU | load | req/s | scheduler | TTFT p50 (s) | TTFT p99 (s) | "
        "TBT p99 (s) | E2E p99 (s) | SLO attainment | goodput (req/s) | sim wall (s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, trace in traces(args.traces).items():
        for gpu in ("a100-80gb", "h100-80gb"):
            model = deployment_model(MODEL, gpu, TP)
            blocks = kv_blocks(MODEL, gpu, TP)
            for load in loads:
                scaled = scale_rate(trace, load)
                rate = (len(scaled) - 1) / scaled.duration()
                for scheduler in SCHEDULERS:
                    started = time.perf_counter()
                    run = simulate_serving(
                        scaled, model, ReplicaConfig(scheduler, blocks), REPLICAS
                    )
                    wall = time.perf_counter() - started
                    s = serving_summary(run, slo)
                    print(
                        f"| {name} ({len(trace):,}) | {gpu} | {load:g}x | {rate:.1f} | "
                        f"{scheduler} | {s['ttft_s']['p50']:.2f} | {s['ttft_s']['p99']:.2f} | "
                        f"{s['tbt_s']['p99']:.3f} | {s['e2e_s']['p99']:.1f} | "
                        f"{s['slo_attainment']:.1%} | {s['goodput_rps']:.2f} | {wall:.1f} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
