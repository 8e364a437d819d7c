"""Serving fidelity: the published orderings of the replica schedulers, reproduced or not, on
the Azure LLM 2023 traces with llama2-70b on A100 TP 8 (the measured Splitwise table,
interpolated: the ``fitted`` performance model).

1. Throughput against static batching (Orca, Yu et al. OSDI'22, §6; vLLM, Kwon et al.
   SOSP'23, §6): the highest request rate one replica sustains with a mean normalized latency
   (end-to-end latency over output tokens, averaged over requests) of at most
   ``--normalized`` s/token, for static, orca and vllm.
2. Capacity under a P99 TBT SLO (Sarathi-Serve, Agrawal et al. OSDI'24, §5): the highest
   request rate one replica sustains with the P99 time between tokens (every gap, pooled) at
   most the SLO and the median TTFT at most 2 s (Sarathi-Serve also bounds the median
   scheduling delay by 2 s), for sarathi (budget from a TBT target), vllm without chunked
   prefill and orca. The SLOs are Sarathi-Serve's form: strict 5x and relaxed 25x the decode
   iteration of a batch of 32 requests of 4,096 tokens of context without a prefill beside
   it; sarathi's ``tbt_target`` is the SLO less that decode iteration (room for the decodes
   beside a chunk).

Rates are the trace's arrivals scaled (``scale_rate``); the search doubles the load factor
until the criterion fails, then bisects to 5%. ``--traces``: the folder of the shared Azure
traces (the first ``--requests`` requests of each); the bundled slices when absent.

    python bench/serving_fidelity.py [--traces ../shared/traces/inference/azure-llm-2023]
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dlsched.serving.arrivals import scale_rate
from dlsched.serving.bundled import bundled_requests_path
from dlsched.serving.cluster import ServingRun, simulate_serving
from dlsched.serving.config import ReplicaConfig
from dlsched.serving.hardware import kv_blocks
from dlsched.serving.metrics import Slo, request_table, serving_summary
from dlsched.serving.perf.deployment import deployment_model
from dlsched.serving.perf.model import IterationModel
from dlsched.serving.readers.read import read_requests
from dlsched.serving.replica import scheduler_for
from dlsched.serving.requests import RequestTrace

DEFAULT_TRACES = Path(__file__).resolve().parents[1] / "../shared/traces/inference/azure-llm-2023"
MODEL, GPU, TP = "llama2-70b", "a100-80gb", 8


def traces(folder: Path, count: int) -> dict[str, RequestTrace]:
    """The code and conversation traces: the first ``count`` requests from ``folder``, else
    the bundled slices."""
    out = {}
    for name, bundled in (("code", "azure_code_3000"), ("conv", "azure_conv_5000")):
        path = folder / f"AzureLLMInferenceTrace_{name}.csv"
        source = path if path.is_file() else bundled_requests_path(bundled)
        trace = read_requests(source).trace
        out[name] = RequestTrace(trace.table.slice(0, min(count, len(trace))))
    return out


def rate(trace: RequestTrace) -> float:
    return (len(trace) - 1) / trace.duration()


def capacity(
    trace: RequestTrace,
    serve: Callable[[RequestTrace], ServingRun],
    ok: Callable[[ServingRun], bool],
) -> tuple[float, int]:
    """The highest load factor of ``trace`` whose run ``ok`` accepts (to 5%; 0 when not even
    1/256) and the simulations it took."""
    runs = 0

    def meets(load: float) -> bool:
        nonlocal runs
        runs += 1
        return ok(serve(scale_rate(trace, load)))

    low, high = 0.0, 1.0
    while meets(high):
        low, high = high, high * 2
        if high > 1024:
            return low, runs
    if low == 0.0:
        while high > 1 / 256 and not meets(high / 2):
            high /= 2
        if high <= 1 / 256:
            return 0.0, runs
        low = high / 2
    while high / low > 1.05:
        middle = math.sqrt(low * high)
        low, high = (middle, high) if meets(middle) else (low, middle)
    return low, runs


def normalized_latency(run: ServingRun) -> float:
    table = request_table(run)
    e2e = table.column("e2e").to_numpy(zero_copy_only=False)
    outputs = table.column("output_tokens").to_numpy()
    return float(np.nanmean(e2e / outputs))


def sarathi_slo_ok(slo: float) -> Callable[[ServingRun], bool]:
    def ok(run: ServingRun) -> bool:
        s = serving_summary(run, Slo())
        return bool(s["tbt_s"]["p99"] <= slo and s["ttft_s"]["p50"] <= 2.0)

    return ok


def decode_reference(model: IterationModel) -> float:
    """A decode iteration of 32 requests of 4,096 tokens of context, nothing prefilled."""
    return model.iteration_time(0, 0.0, 0, 32, 32 * 4096)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--normalized", type=float, default=0.5)
    args = parser.parse_args()
    model = deployment_model(MODEL, GPU, TP)
    blocks = kv_blocks(MODEL, GPU, TP)
    loaded = traces(args.traces, args.requests)

    print(
        f"\n1. Throughput: highest rate of one replica ({MODEL} {GPU} TP{TP}) with mean "
        f"normalized latency <= {args.normalized:g} s/token\n"
    )
    print("| trace | scheduler | capacity (req/s) | x static | simulations | wall (s) |")
    print("|---|---|---|---|---|---|")
    for name, trace in loaded.items():
        base = None
        for scheduler in ("static", "orca", "vllm"):
            config = ReplicaConfig(scheduler, blocks)
            started = time.perf_counter()
            load, runs = capacity(
                trace,
                lambda t, c=config: simulate_serving(t, model, c),
                lambda r: normalized_latency(r) <= args.normalized,
            )
            wall = time.perf_counter() - started
            found = load * rate(trace)
            base = found if base is None else base
            ratio = f"{found / base:.1f}x" if base else "-"
            print(
                f"| {name} ({len(trace):,}) | {scheduler} | {found:.2f} | {ratio} | {runs} | "
                f"{wall:.1f} |",
                flush=True,
            )

    reference = decode_reference(model)
    print(
        f"\n2. Capacity under a P99 TBT SLO (decode iteration of 32 x 4,096 tokens: "
        f"{reference * 1e3:.1f} ms) and median TTFT <= 2 s\n"
    )
    print(
        "| trace | SLO | P99 TBT SLO (s) | scheduler | budget (tokens) | capacity (req/s) | "
        "x vllm (no chunking) | x orca | simulations | wall (s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, trace in loaded.items():
        for label, factor in (("strict", 5.0), ("relaxed", 25.0)):
            slo = factor * reference
            configs = {
                "sarathi": ReplicaConfig("sarathi", blocks, tbt_target=slo - reference),
                "vllm (no chunking)": ReplicaConfig("vllm", blocks, chunked_prefill=False),
                "orca": ReplicaConfig("orca", blocks),
            }
            found: dict[str, float] = {}
            rows = []
            for scheduler, config in configs.items():
                started = time.perf_counter()
                load, runs = capacity(
                    trace,
                    lambda t, c=config: simulate_serving(t, model, c),
                    sarathi_slo_ok(slo),
                )
                wall = time.perf_counter() - started
                found[scheduler] = load * rate(trace)
                budget = scheduler_for(config, model).budget
                rows.append((scheduler, budget, runs, wall))
            for scheduler, budget, runs, wall in rows:
                vs = [
                    f"{found[scheduler] / found[b]:.2f}x" if found[b] else "-"
                    for b in ("vllm (no chunking)", "orca")
                ]
                print(
                    f"| {name} ({len(trace):,}) | {label} | {slo:.3f} | {scheduler} | "
                    f"{budget if budget is not None else '-'} | {found[scheduler]:.2f} | "
                    f"{vs[0]} | {vs[1]} | {runs} | {wall:.1f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
