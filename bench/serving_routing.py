"""Request routers on the Azure 2023 traces: 4 replicas of llama2-70b TP 8 on H100 (fitted
model, vLLM's scheduler) at 1x and 2x the traces' arrival rates, under each router.
Prints a Markdown table (SLO: TTFT 2 s, mean TBT 0.2 s) with each simulation's wall time.

    python bench/serving_routing.py [--traces ../shared/traces/inference/azure-llm-2023]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from dlsched.serving.arrivals import scale_rate
from dlsched.serving.bundled import bundled_requests_path
from dlsched.serving.cluster import ROUTERS, simulate_serving
from dlsched.serving.config import ReplicaConfig
from dlsched.serving.hardware import GPUS, MODELS, kv_blocks
from dlsched.serving.metrics import Slo, serving_summary
from dlsched.serving.perf.deployment import deployment_model
from dlsched.serving.readers.read import read_requests

DEFAULT_TRACES = Path(__file__).resolve().parents[1] / "../shared/traces/inference/azure-llm-2023"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    args = parser.parse_args()
    shape, gpu = MODELS["llama2-70b"], GPUS["h100-80gb"]
    model = deployment_model(shape.name, gpu.name, 8)
    config = ReplicaConfig("vllm", kv_blocks(shape.name, gpu.name, 8))
    print(
        "| trace | load | router | SLO attainment | TTFT p99 (s) | TBT p99 (s) | E2E p99 (s) | "
        "wall (s) |\n|---|---|---|---|---|---|---|---|"
    )
    for name, bundled in (("code", "azure_code_3000"), ("conv", "azure_conv_5000")):
        path = args.traces / f"AzureLLMInferenceTrace_{name}.csv"
        trace = read_requests(path if path.is_file() else bundled_requests_path(bundled)).trace
        for load in (1.0, 2.0):
            scaled = scale_rate(trace, load)
            for router in ROUTERS:
                started = time.perf_counter()
                s = serving_summary(simulate_serving(scaled, model, config, 4, router), Slo())
                wall = time.perf_counter() - started
                print(
                    f"| {name} ({len(trace):,}) | {load:g}x | {router} | "
                    f"{s['slo_attainment']:.1%} | {s['ttft_s']['p99']:.2f} | "
                    f"{s['tbt_s']['p99']:.3f} | {s['e2e_s']['p99']:.1f} | {wall:.2f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
