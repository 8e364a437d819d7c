"""Serving simulator scale: N requests (default 1,000,000) through R replicas (default 32).

Requests arrive as a Poisson process at ``--rate-per-replica`` x R per second with prompt
and output lengths drawn from the Azure conversation trace (the shared one, else the bundled
slice); llama2-70b on A100 TP8 with the fitted model, vLLM's scheduler, round robin.
Prints the wall time of the simulation alone, of the summary, the decode iterations simulated
and the peak RSS.

    python bench/serving_scale.py [--requests 1000000] [--replicas 32] [--scheduler vllm]
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

from dlsched.serving.arrivals import Lengths, synthetic_requests
from dlsched.serving.bundled import bundled_requests_path
from dlsched.serving.cluster import simulate_serving
from dlsched.serving.config import ReplicaConfig
from dlsched.serving.hardware import kv_blocks
from dlsched.serving.metrics import Slo, serving_summary
from dlsched.serving.perf.deployment import deployment_model
from dlsched.serving.readers.read import read_requests

SHARED_CONV = (
    Path(__file__).resolve().parents[1]
    / "../shared/traces/inference/azure-llm-2023/AzureLLMInferenceTrace_conv.csv"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--replicas", type=int, default=32)
    parser.add_argument("--rate-per-replica", type=float, default=1.2)
    parser.add_argument("--scheduler", default="vllm")
    args = parser.parse_args()
    source = SHARED_CONV if SHARED_CONV.is_file() else bundled_requests_path("azure_conv_5000")
    lengths = Lengths(read_requests(source).trace)
    rate = args.rate_per_replica * args.replicas
    trace = synthetic_requests(rate, count=args.requests, lengths=lengths, seed=1)
    model = deployment_model("llama2-70b", "a100-80gb", 8)
    blocks = kv_blocks("llama2-70b", "a100-80gb", 8)
    config = ReplicaConfig(args.scheduler, blocks)
    started = time.perf_counter()
    run = simulate_serving(trace, model, config, args.replicas)
    simulated = time.perf_counter() - started
    started = time.perf_counter()
    summary = serving_summary(run, Slo())
    summarized = time.perf_counter() - started
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{args.requests:,} requests ({rate:g}/s, {trace.duration() / 3600:.1f} h of arrivals), "
        f"{args.replicas} replicas, {args.scheduler}: simulate {simulated:.1f} s, summary "
        f"{summarized:.1f} s, {summary['iterations']:,} iterations, "
        f"{summary['iterations'] / simulated:,.0f} iterations/s, peak RSS {rss:,.0f} MiB; "
        f"SLO attainment {summary['slo_attainment']:.1%}, E2E p99 {summary['e2e_s']['p99']:.1f} s"
    )


if __name__ == "__main__":
    main()
