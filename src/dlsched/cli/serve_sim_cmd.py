"""``dlsched serve-sim``: simulate LLM inference replicas serving a request trace."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from dlsched.cli.errors import BAD_ROWS_HINT, user_errors
from dlsched.cli.options import ForceOpt, ProgressOpt, one_trace
from dlsched.cli.progress import job_progress
from dlsched.cli.run_options import with_run_options
from dlsched.serving.bundled import BUNDLED_REQUESTS
from dlsched.serving.names import PERF_MODELS, ROUTERS
from dlsched.serving.schedulers import ALIASES, SCHEDULERS

DEFAULT_LINK_GBPS = 400.0  # one 400 Gbit/s NIC per replica: an assumption, not a measurement
# Scheduler options and the ReplicaConfig field each sets: a scheduler whose ``options`` do
# not name the field refuses the option.
SCHEDULER_OPTIONS = {
    "--max-batch": "max_batch",
    "--max-batched-tokens": "max_batched_tokens",
    "--chunked-prefill": "chunked_prefill",
    "--chunk-tokens": "chunk_tokens",
    "--tbt-target": "tbt_target",
    "--max-seqs": "max_seqs",
}


@with_run_options(names=("cluster", "policy", "seed"), defaults={"policy": None})
def serve_sim(
    values: dict[str, Any],
    requests: Annotated[
        str | None,
        typer.Argument(
            help="Request trace file (Azure LLM, BurstGPT, Mooncake .jsonl, dlsched request "
            f"CSV) or a bundled one: {', '.join(BUNDLED_REQUESTS)}. The same as --trace.",
            show_default=False,
            metavar="TRACE",
        ),
    ] = None,
    *,
    trace_option: Annotated[
        str | None,
        typer.Option(
            "--trace",
            "--requests",
            help="The request trace, as the argument (--requests: its name in dlsched sweep).",
        ),
    ] = None,
    out: Annotated[Path, typer.Option(help="Run directory to write.")],
    format: Annotated[
        str | None, typer.Option("--format", help="Trace format (default: detected).")
    ] = None,
    skip_bad_rows: Annotated[
        bool, typer.Option(help="Drop rejected rows (counted) instead of stopping.")
    ] = False,
    model: Annotated[str, typer.Option(help="llama2-70b or bloom-176b.")] = "llama2-70b",
    gpu: Annotated[str, typer.Option(help="a100-80gb, h100-80gb or h100-80gb-pcap.")] = "a100-80gb",
    tp: Annotated[int, typer.Option(help="Tensor-parallel GPUs per replica.")] = 8,
    perf_model: Annotated[
        str,
        typer.Option(
            help=f"{PERF_MODELS[0]} (the bundled measurements of this model, GPU and TP, "
            f"interpolated), {PERF_MODELS[1]} (for a deployment without measurements) or "
            f"{PERF_MODELS[2]} (one line per phase fitted to the measurements)."
        ),
    ] = "fitted",
    scheduler: Annotated[
        str,
        typer.Option(
            help=f"Replica scheduler: {', '.join(SCHEDULERS)} (or an installed one; "
            + ", ".join(f"{a} = {b}" for a, b in ALIASES.items())
            + ")."
        ),
    ] = "vllm",
    replicas: Annotated[
        int | None, typer.Option(help="Replicas behind the router (default 1).")
    ] = None,
    router: Annotated[
        str | None, typer.Option(help=", ".join(ROUTERS) + " (default round-robin).")
    ] = None,
    load_scale: Annotated[
        float, typer.Option(help="Arrivals L times faster than the trace's.")
    ] = 1.0,
    max_seqs: Annotated[
        int | None,
        typer.Option(help="vllm, sarathi, orca: requests a replica holds at once (default 256)."),
    ] = None,
    max_batched_tokens: Annotated[
        int | None,
        typer.Option(help="vllm: token budget per iteration, decodes and prompts (default 8192)."),
    ] = None,
    chunked_prefill: Annotated[
        bool | None,
        typer.Option(
            "--chunked-prefill/--no-chunked-prefill",
            help="vllm: cut prompts to the token budget (default on), or run them whole.",
            show_default=False,
        ),
    ] = None,
    chunk_tokens: Annotated[
        int | None, typer.Option(help="sarathi: token budget per iteration (default 512).")
    ] = None,
    tbt_target: Annotated[
        float | None,
        typer.Option(
            help="sarathi: derive the token budget from this time between tokens, s (the "
            "largest prompt chunk whose iteration takes at most it)."
        ),
    ] = None,
    max_batch: Annotated[
        int | None, typer.Option(help="static: requests per batch (default 16).")
    ] = None,
    preemption: Annotated[
        str,
        typer.Option(
            help="recompute (drop the KV cache, prefill again) or swap (to host memory "
            "and back over PCIe); vllm and sarathi."
        ),
    ] = "recompute",
    pcie_gbps: Annotated[
        float | None,
        typer.Option(
            help="With --preemption swap: host link per GPU, GB/s one way (default: "
            "A100 32, H100 64)."
        ),
    ] = None,
    memory_fraction: Annotated[
        float, typer.Option(help="Fraction of GPU memory for weights and KV cache.")
    ] = 0.9,
    slo_ttft: Annotated[float, typer.Option(help="TTFT objective, seconds.")] = 2.0,
    slo_tbt: Annotated[float, typer.Option(help="Mean time-between-tokens objective, s.")] = 0.2,
    prefill_replicas: Annotated[
        int | None,
        typer.Option(
            help="Disaggregate: this many of --replicas only prefill, the rest only decode "
            "(vllm or sarathi, round robin in each pool)."
        ),
    ] = None,
    link_gbps: Annotated[
        float | None,
        typer.Option(help="With --prefill-replicas: KV transfer link, Gbit/s (default 400)."),
    ] = None,
    autoscale: Annotated[
        bool,
        typer.Option(
            help="Size the replicas per window against the SLO (--window, --headroom, "
            "--cold-start, --capacity) instead of --replicas; implied by --beside."
        ),
    ] = False,
    beside: Annotated[
        str | None,
        typer.Option(
            help="A training job trace to run beside: replicas become jobs of --cluster, "
            "sized per window by an autoscaler, under --policy."
        ),
    ] = None,
    window: Annotated[
        float | None, typer.Option(help="Autoscaled: window, s (default 600).")
    ] = None,
    headroom: Annotated[
        float | None,
        typer.Option(help="Autoscaled: replicas per window x this (default 1.2)."),
    ] = None,
    cold_start: Annotated[
        float | None,
        typer.Option(help="Autoscaled: model load time of a replica, s (default 120)."),
    ] = None,
    capacity: Annotated[
        float | None,
        typer.Option(help="Autoscaled: req/s one replica serves at the SLO (default: measured)."),
    ] = None,
    progress: ProgressOpt = True,
    force: ForceOpt = False,
) -> None:
    """Serve a request trace on LLM replicas (vLLM's, Sarathi-Serve's or Orca's iteration-level
    scheduling over paged KV memory, or static batching) and write requests, replica timeline,
    config and summary to OUT.

    --cluster and --policy are those of dlsched simulate and apply with --beside (the cluster
    both share; the policy over training and replicas, serving-first by default); --seed seeds
    the random router."""
    # The simulator and the serving models load when a run starts, not for --help.
    from dlsched.cluster.parse import resolve_cluster
    from dlsched.metrics.rundir import RUN_DIR
    from dlsched.serving.arrivals import scale_rate
    from dlsched.serving.autoscale import Autoscaler
    from dlsched.serving.bundled import bundled_requests_path
    from dlsched.serving.cluster import simulate_serving
    from dlsched.serving.colocated import (
        autoscaled_serving,
        measure_capacity,
        run_colocated,
        training_summary,
    )
    from dlsched.serving.config import ReplicaConfig
    from dlsched.serving.disaggregated import Pool, simulate_disaggregated
    from dlsched.serving.energy import plain_extra, serving_energy, serving_power
    from dlsched.serving.hardware import kv_blocks, model_shape, swap_seconds_per_token
    from dlsched.serving.metrics import Slo
    from dlsched.serving.perf.deployment import deployment_model
    from dlsched.serving.readers.read import read_requests
    from dlsched.serving.replica import scheduler_for
    from dlsched.serving.replica_count import replica_steps
    from dlsched.serving.rundir import write_serving_run
    from dlsched.trace.read import read_trace

    cluster, policy, seed = values["cluster"], values["policy"], values["seed"]
    with user_errors(BAD_ROWS_HINT):
        requests = one_trace(requests, trace_option)
        RUN_DIR.check(out, force)
        given = {
            "--max-batch": max_batch,
            "--max-batched-tokens": max_batched_tokens,
            "--chunked-prefill": chunked_prefill,
            "--chunk-tokens": chunk_tokens,
            "--tbt-target": tbt_target,
            "--max-seqs": max_seqs,
        }
        scheduler = _check_scheduler_options(scheduler, given)
        scaling = {
            "--window": window,
            "--headroom": headroom,
            "--cold-start": cold_start,
            "--capacity": capacity,
        }
        autoscale = autoscale or beside is not None
        if beside is None:
            shared = {"--cluster": cluster, "--policy": policy}
            _refuse_given(shared, "needs --beside (a training trace to run beside)")
        elif cluster is None:
            raise ValueError("--beside needs --cluster (the cluster both share)")
        if autoscale:
            fixed = {
                "--replicas": replicas,
                "--router": router,
                "--prefill-replicas": (prefill_replicas),
            }
            _refuse_given(fixed, "does not apply when autoscaled (the autoscaler sizes replicas)")
        else:
            _refuse_given(scaling, "needs --autoscale or --beside")
        replicas = 1 if replicas is None else replicas
        router = router or "round-robin"
        _check_disaggregation(prefill_replicas, link_gbps, replicas, scheduler, router)
        path = bundled_requests_path(requests) if requests in BUNDLED_REQUESTS else requests
        read = read_requests(path, format, skip_bad_rows)
        trace = read.trace if load_scale == 1.0 else scale_rate(read.trace, load_scale)
        if not len(trace):
            raise ValueError(f"{path}: no request to serve")
        iteration_model = deployment_model(model, gpu, tp, perf_model)
        limits: dict[str, Any] = {SCHEDULER_OPTIONS[f]: value for f, value in given.items()}
        if pcie_gbps is not None and preemption != "swap":
            raise ValueError("--pcie-gbps needs --preemption swap (nothing moves without it)")
        link_bytes = None if pcie_gbps is None else pcie_gbps * 1e9
        config = ReplicaConfig(
            scheduler,
            kv_blocks=kv_blocks(model, gpu, tp, memory_fraction),
            preemption=preemption,
            swap_s_per_token=(
                swap_seconds_per_token(model, gpu, tp, link_bytes) if preemption == "swap" else 0.0
            ),
            **{k: v for k, v in limits.items() if v is not None},
        )
        scheduler_for(config, iteration_model)  # a scheduler refuses what it cannot run
        slo = Slo(slo_ttft, slo_tbt)
        link = (link_gbps or DEFAULT_LINK_GBPS) * 1e9 / 8
        extra: dict[str, object] = {}
        power = serving_power(model, gpu, tp)
        if autoscale:
            scaler = Autoscaler(
                capacity or measure_capacity(trace, iteration_model, config, slo),
                window_s=window or 600.0,
                headroom=headroom or 1.2,
                cold_start_s=120.0 if cold_start is None else cold_start,
            )
            extra["autoscaler"] = dataclasses.asdict(scaler)
        label = "serving, requests done" if beside is None else "training and serving, done"
        with job_progress(label, progress) as bar:
            if autoscale and beside is None:
                run, held = autoscaled_serving(trace, scaler, iteration_model, config, bar)
                extra |= serving_energy(run, power, tp, held_s=sum(e - s for s, e in held))
                serving = [(s + scaler.cold_start_s, e) for s, e in held]
                extra["replica_count"] = replica_steps(serving)
            elif beside is not None:
                assert cluster is not None
                training = read_trace(beside).trace
                mixed = run_colocated(
                    trace,
                    training,
                    resolve_cluster(cluster),
                    scaler,
                    iteration_model,
                    config,
                    tp,
                    policy or "serving-first",
                    bar,
                )
                run = mixed.serving
                extra["training"] = training_summary(mixed, power)
                extra["replica_count"] = replica_steps(mixed.instances)
            else:
                if prefill_replicas is None:
                    run = simulate_serving(
                        trace, iteration_model, config, replicas, router, seed, progress=bar
                    )
                else:
                    run = simulate_disaggregated(
                        trace,
                        Pool(iteration_model, config, prefill_replicas),
                        Pool(iteration_model, config, replicas - prefill_replicas),
                        model_shape(model).kv_bytes_per_token,
                        link,
                        progress=bar,
                    )
                extra |= plain_extra(run, model, gpu, tp)
        recorded = {
            "kind": "serving",
            "requests": str(path),
            "format": read.format,
            "rows_rejected": len(read.errors),
            "model": model,
            "gpu": gpu,
            "tp": tp,
            "perf_model": perf_model,
            "replicas": None if autoscale else replicas,
            "router": None if autoscale else router,
            "autoscale": autoscale,
            "load_scale": load_scale,
            "seed": seed,
            "prefill_replicas": prefill_replicas,
            "link_gbps": None if prefill_replicas is None else link * 8 / 1e9,
            "replica": dataclasses.asdict(config),
            "beside": beside,
            "cluster": cluster,
            "policy": None if beside is None else policy or "serving-first",
        }
        summary = write_serving_run(out, run, slo, recorded, force, extra)
    typer.echo(json.dumps(_headline(summary), indent=2))
    typer.echo(f"wrote {out}")


def _refuse_given(options: Mapping[str, object], why: str) -> None:
    """Refuse the first of ``options`` given (not None), naming it and ``why``."""
    for flag, value in options.items():
        if value is not None:
            raise ValueError(f"{flag} {why}")


def _check_scheduler_options(scheduler: str, given: Mapping[str, object]) -> str:
    """The scheduler ``scheduler`` names (an alias resolved), after refusing, naming it, the
    first option of ``given`` (not None) that it does not read."""
    from dlsched.serving.schedulers import replica_schedulers, resolve

    name = resolve(scheduler)
    found = replica_schedulers()
    reads = found[name].options
    for flag, value in given.items():
        if value is not None and SCHEDULER_OPTIONS[flag] not in reads:
            users = [n for n in found if SCHEDULER_OPTIONS[flag] in found[n].options]
            raise ValueError(
                f"{flag} does not apply to scheduler {name!r} (only to {', '.join(users)})"
            )
    if given.get("--tbt-target") is not None and given.get("--chunk-tokens") is not None:
        raise ValueError("--tbt-target derives the budget --chunk-tokens gives: give one")
    return name


def _check_disaggregation(
    prefill: int | None, link_gbps: float | None, replicas: int, scheduler: str, router: str
) -> None:
    """Refuse, naming the option, what a disaggregated run cannot honour."""
    if prefill is None:
        if link_gbps is not None:
            raise ValueError("--link-gbps needs --prefill-replicas (no KV moves without it)")
        return
    if not 1 <= prefill < replicas:
        raise ValueError(
            f"--prefill-replicas must leave a decode replica: 1..{replicas - 1} of "
            f"--replicas {replicas}, got {prefill}"
        )
    from dlsched.serving.replica import decode_replica_schedulers

    able = decode_replica_schedulers()
    if scheduler not in able:
        raise ValueError(f"--prefill-replicas runs {' or '.join(able)}, not {scheduler!r}")
    if router != "round-robin":
        raise ValueError(f"--prefill-replicas routes round robin in each pool, not {router!r}")
    if link_gbps is not None and not link_gbps > 0:
        raise ValueError(f"--link-gbps must be positive, got {link_gbps:g}")


def _headline(summary: dict[str, object]) -> dict[str, object]:
    keys = ("requests", "served", "rejected", "preemptions", "ttft_s", "tbt_s", "e2e_s")
    shown = (*keys, "slo_attainment", "goodput_rps", "energy_j", "training")
    return {k: summary[k] for k in shown if k in summary}
