"""Prefill/decode disaggregation against one mixed pool: the highest load each sustains at an
SLO attainment of 90% (the Splitwise paper's comparison, Patel et al. ISCA'24).

Four replicas of llama2-70b TP 8 on H100 (fitted model) serve the whole Azure 2023 code and
conversation traces (``--traces``; the bundled slices when absent) with arrivals scaled by
0.25, 0.5, ... 4: as one mixed pool (vLLM's scheduler), and split into k prefill and 4 - k
decode replicas with the KV cache moved over a 50 GB/s link (one 400 Gb/s NIC; an assumption
of this bench). SLO: TTFT 2 s, mean TBT 0.2 s. Prints a Markdown table.

    python bench/serving_disaggregation.py [--traces ../shared/traces/inference/azure-llm-2023]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from dlsched.serving.arrivals import scale_rate
from dlsched.serving.bundled import bundled_requests_path
from dlsched.serving.cluster import ServingRun, simulate_serving
from dlsched.serving.config import ReplicaConfig
from dlsched.serving.disaggregated import Pool, simulate_disaggregated
from dlsched.serving.hardware import GPUS, MODELS, kv_blocks
from dlsched.serving.metrics import Slo, serving_summary
from dlsched.serving.perf.deployment import deployment_model
from dlsched.serving.readers.read import read_requests
from dlsched.serving.requests import RequestTrace

DEFAULT_TRACES = Path(__file__).resolve().parents[1] / "../shared/traces/inference/azure-llm-2023"
LINK_BYTES_PER_S = 50e9
TARGET = 0.9
REPLICAS = 4


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    args = parser.parse_args()
    shape, gpu = MODELS["llama2-70b"], GPUS["h100-80gb"]
    model = deployment_model(shape.name, gpu.name, 8)
    config = ReplicaConfig("vllm", kv_blocks(shape.name, gpu.name, 8))
    slo = Slo()
    setups: dict[str, Callable[[RequestTrace], ServingRun]] = {
        "mixed 4": lambda t: simulate_serving(t, model, config, REPLICAS)
    }
    for k in range(1, REPLICAS):
        setups[f"prefill {k} + decode {REPLICAS - k}"] = lambda t, k=k: simulate_disaggregated(
            t,
            Pool(model, config, k),
            Pool(model, config, REPLICAS - k),
            shape.kv_bytes_per_token,
            LINK_BYTES_PER_S,
        )
    loads = [0.25 * i for i in range(1, 17)]
    print(
        "| trace | setup | highest load at ≥90% SLO attainment | req/s | attainment at 1x | "
        "at 2x | at 3x |\n|---|---|---|---|---|---|---|"
    )
    for name, bundled in (("code", "azure_code_3000"), ("conv", "azure_conv_5000")):
        path = args.traces / f"AzureLLMInferenceTrace_{name}.csv"
        trace = read_requests(path if path.is_file() else bundled_requests_path(bundled)).trace
        rate = (len(trace) - 1) / trace.duration()
        for label, run in setups.items():
            attained = {
                load: serving_summary(run(scale_rate(trace, load)), slo)["slo_attainment"]
                for load in loads
            }
            met = [load for load in loads if attained[load] >= TARGET]
            best = max(met) if met else None
            shown = f"{best:g}x" if best is not None else "none (< 0.25x)"
            req_s = f"{best * rate:.1f}" if best is not None else "-"
            print(
                f"| {name} ({len(trace):,}) | {label} | {shown} | {req_s} | "
                f"{attained[1.0]:.1%} | {attained[2.0]:.1%} | {attained[3.0]:.1%} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
