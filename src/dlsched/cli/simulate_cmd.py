"""``dlsched simulate``: replay a trace on a cluster under a policy and write a run directory."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated

import typer

from dlsched.cli.errors import BAD_ROWS_HINT, user_errors
from dlsched.cli.options import (
    ForceOpt,
    ProgressOpt,
    QueueMapOpt,
    TraceOpt,
    parse_options,
    single,
    split_list,
)
from dlsched.cli.progress import job_progress
from dlsched.metrics.rundir import RUN_DIR
from dlsched.policy.registry import policies
from dlsched.presets import get_preset
from dlsched.runner import Experiment, Selection, check_extras, run_experiment
from dlsched.sim.config import CheckpointConfig, FaultConfig, PowerConfig, SimConfig
from dlsched.sim.groups import policy_catalog

BACKFILL_OPTION = "allow_backfill"
POWER_KEYS = (
    "energy_kwh",
    "energy_saved_fraction",
    "mean_powered_off_nodes",
    "wakeups",
    "extra_queue_fraction",
)


def _backfills(cls: type) -> bool:
    return dataclasses.is_dataclass(cls) and any(
        f.name == BACKFILL_OPTION for f in dataclasses.fields(cls)
    )


def check_backfill(policy: str) -> None:
    """``--backfill`` exists only for the non-preemptive policies; say so by name (the policy's
    own error would name an ``allow_backfill`` option the user never typed)."""
    found = policies()
    if policy in found and _backfills(found[policy]):
        return
    if policy not in found and policy not in {name for name, _, _ in policy_catalog()}:
        return  # an unknown name is reported, with the valid ones, when the policy is built
    able = sorted(name for name, cls in found.items() if _backfills(cls))
    raise ValueError(
        f"--backfill does not apply to policy {policy!r}; policies that backfill: {', '.join(able)}"
    )


def check_power_options(
    manager: str | None, options: list[str] | None, wake_latency: float, baseline: bool
) -> None:
    """The power options need ``--power-manager``: without one every node is always on, so
    they would change nothing (refused, naming the option, rather than ignored)."""
    if manager is not None:
        return
    given = [
        flag
        for flag, used in (
            ("--power-opt", bool(options)),
            ("--wake-latency", wake_latency != PowerConfig.wake_latency_s),
            ("--no-power-baseline", not baseline),
        )
        if used
    ]
    if given:
        raise ValueError(
            f"{', '.join(given)}: needs --power-manager (without one every node stays on)"
        )


def simulate(
    out: Annotated[Path, typer.Option(help="Run directory to write.")],
    trace: TraceOpt = None,
    cluster: Annotated[
        str | None, typer.Option(help="Built-in name, TOML file, or shorthand 32x8.")
    ] = None,
    preset: Annotated[
        str | None,
        typer.Option(help="A named setup (dlsched preset list) instead of --trace/--cluster."),
    ] = None,
    load_scale: Annotated[
        float | None,
        typer.Option(help="With --preset: arrivals L times faster (default: the preset's)."),
    ] = None,
    policy: Annotated[
        str, typer.Option(help="One policy (dlsched list policies); several: dlsched sweep.")
    ] = "fifo",
    kind_policy: Annotated[
        list[str] | None,
        typer.Option(
            help="KIND=POLICY: schedule the trace's rigid, elastic or ps jobs with another "
            "policy (repeatable); its options are --policy-opt KIND.KEY=VALUE."
        ),
    ] = None,
    restart_cost: Annotated[
        str | None,
        typer.Option(
            help="Restart cost of every job: helios (7/30/60 s), pollux (30 s, also at the "
            "first start), smd (30 s) or none (default: each job kind's own)."
        ),
    ] = None,
    placement: Annotated[
        str | None,
        typer.Option(
            help="consolidate (default), pack, spread, random or topology (dlsched list "
            "placements)."
        ),
    ] = None,
    placement_opt: Annotated[
        list[str] | None,
        typer.Option(
            help="Placement option KEY=VALUE (repeatable); topology: required=LEVEL or "
            "preferred=LEVEL, LEVEL node, rack or block."
        ),
    ] = None,
    comm_model: Annotated[
        str | None,
        typer.Option(
            help="tiers: rigid jobs spread over nodes, racks or blocks run slower (assumed "
            "factors, docs/topology.md); default: placement does not change run times."
        ),
    ] = None,
    estimator: Annotated[
        str | None, typer.Option(help="Duration estimator for policies that need one (qssf).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed for every random choice.")] = 0,
    policy_opt: Annotated[
        list[str] | None, typer.Option(help="Policy option KEY=VALUE (repeatable).")
    ] = None,
    backfill: Annotated[
        bool, typer.Option(help="Non-preemptive policies: backfill instead of blocking.")
    ] = False,
    no_partitions: Annotated[
        bool, typer.Option("--no-partitions", help="Pool all VCs into one partition.")
    ] = False,
    trace_format: Annotated[
        str | None, typer.Option("--format", help="Trace format (default: detect).")
    ] = None,
    skip_bad_rows: Annotated[bool, typer.Option(help="Drop bad trace rows (reported).")] = False,
    start: Annotated[str | None, typer.Option(help="Only jobs submitted at/after.")] = None,
    end: Annotated[str | None, typer.Option(help="Only jobs submitted before.")] = None,
    vc: Annotated[
        list[str] | None, typer.Option(help="Only these VCs (repeated or comma-separated).")
    ] = None,
    gpu_only: Annotated[bool, typer.Option(help="Only jobs that use GPUs.")] = False,
    subsample: Annotated[
        float | None, typer.Option(help="Keep a fraction (<1) or a count (>=1) of jobs.")
    ] = None,
    submit_scale: Annotated[float, typer.Option(help="Multiply submit times.")] = 1.0,
    checkpoint_interval: Annotated[
        float, typer.Option(help="Seconds between a running job's checkpoints (0: none).")
    ] = 3600.0,
    mtbf: Annotated[
        float | None, typer.Option(help="Mean time between failures per node (s).")
    ] = None,
    mttr: Annotated[float, typer.Option(help="Mean time to repair a node (s).")] = 3600.0,
    faults: Annotated[
        str | None, typer.Option(help="CSV node,fail_time,repair_time of outages.")
    ] = None,
    timeline_step: Annotated[float, typer.Option(help="Timeline sampling step (s).")] = 60.0,
    power_manager: Annotated[
        str | None,
        typer.Option(help="Node power manager: ces or reactive (default: nodes always on)."),
    ] = None,
    power_opt: Annotated[
        list[str] | None, typer.Option(help="Power manager option KEY=VALUE (repeatable).")
    ] = None,
    wake_latency: Annotated[
        float, typer.Option(help="Seconds a powered-off node takes to boot.")
    ] = 300.0,
    power_baseline: Annotated[
        bool,
        typer.Option(help="With --power-manager: also run without it and report the difference."),
    ] = True,
    queues: Annotated[
        str | None,
        typer.Option(help="Kueue manifests (YAML file or directory): admission by quota first."),
    ] = None,
    queue_map: QueueMapOpt = None,
    progress: ProgressOpt = True,
    force: ForceOpt = False,
) -> None:
    """Replay a trace on a cluster under a policy; write jobs, timeline, config and summary to
    OUT. With --preset, the preset fixes trace, cluster, job selection and placement."""
    with user_errors(BAD_ROWS_HINT):
        single(policy, "--policy", "to compare policies, run dlsched sweep --policy A,B")
        options = parse_options(policy_opt or [])
        if backfill:
            check_backfill(policy)
            options[BACKFILL_OPTION] = "true"
        check_power_options(power_manager, power_opt, wake_latency, power_baseline)
        if queue_map is not None and queues is None:
            raise ValueError("--queue-map maps jobs to the LocalQueues of --queues; give --queues")
        config = SimConfig(
            policy=policy,
            policy_options=options,
            kind_policies=parse_options(kind_policy or [], "--kind-policy"),
            placement=placement or "consolidate",
            placement_options=parse_options(placement_opt or [], "--placement-opt"),
            comm_model=comm_model,
            estimator=estimator,
            seed=seed,
            use_partitions=not no_partitions,
            checkpoint=CheckpointConfig(restart=restart_cost, interval_s=checkpoint_interval),
            faults=FaultConfig(file=faults, mtbf_s=mtbf, mttr_s=mttr),
            timeline_step_s=timeline_step,
            power=PowerConfig(
                manager=power_manager,
                manager_options=parse_options(power_opt or [], "--power-opt"),
                wake_latency_s=wake_latency,
                compare_baseline=power_baseline,
            ),
            queues=queues,
            queue_map=queue_map,
        )
        selection = Selection(
            start=start,
            end=end,
            vcs=split_list(vc, "--vc"),
            gpu_only=gpu_only,
            subsample=subsample,
            submit_scale=submit_scale,
        )
        if preset is not None:
            fixed = {
                "--trace": trace is not None,
                "--cluster": cluster is not None,
                "--placement": placement is not None,
                "--format": trace_format is not None,
                "--skip-bad-rows": skip_bad_rows,
                "--start": start is not None,
                "--end": end is not None,
                "--vc": bool(vc),
                "--gpu-only": gpu_only,
                "--subsample": subsample is not None,
                "--submit-scale": submit_scale != 1.0,
            }
            if any(fixed.values()):
                given = ", ".join(flag for flag, on in fixed.items() if on)
                raise ValueError(
                    f"--preset fixes the trace, cluster, job selection and placement; drop "
                    f"{given} (or give --trace and --cluster instead of --preset)"
                )
            exp = get_preset(preset).experiment(config, load_scale)
        elif trace is None or cluster is None:
            raise ValueError("give --trace and --cluster, or --preset")
        elif load_scale is not None:
            raise ValueError("--load-scale applies to --preset only; use --submit-scale")
        else:
            exp = Experiment(trace, cluster, config, selection, trace_format, skip_bad_rows)
        inputs = (exp.trace, exp.cluster, faults, queues, queue_map)
        RUN_DIR.check(out, force, inputs=[p for p in inputs if p])
        check_extras(exp.sim)
        with job_progress(f"simulating {policy}, jobs finished", progress) as bar:
            result = run_experiment(exp, out, progress=bar, force=force)
    s = result.summary
    shown = {
        k: s[k]
        for k in (
            "policy",
            "jobs",
            "jobs_set_aside",
            "avg_jct_s",
            "avg_queue_s",
            "makespan_s",
            "gpu_utilization",
            "preemptions",
            "sim_wall_s",
            *POWER_KEYS,
        )
        if k in s
    }
    typer.echo(json.dumps(shown, indent=2))
    if s["trace_rows_rejected"]:
        typer.echo(
            f"skipped {s['trace_rows_rejected']} bad rows of {exp.trace}; "
            f"first: {s['trace_first_rejection']}",
            err=True,
        )
    if s["jobs_set_aside"]:
        typer.echo(f"set aside: {json.dumps(s['set_aside_reasons'])}", err=True)
    typer.echo(f"wrote {out}")
