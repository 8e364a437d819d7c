"""The options of a simulation, defined once.

Every option of a run — trace, cluster, job selection, policy and its options, kind policies,
placement, faults, power, queues, seeds — is one :class:`RunOption` in :data:`RUN_OPTIONS`:
its name (the key of a sweep's grid file and of ``values`` below; the command-line flag is
``--`` and the name with dashes, unless ``flag`` says otherwise), its type, default and help.
``dlsched simulate`` takes each one once, ``dlsched sweep`` the same ones with several values
of an axis option making cells, and a grid file the same keys; so an option added here appears
in all three at once (``tests/cli/test_run_options.py`` checks that they agree).

:func:`experiment_from` turns one set of values (each option's value, or its default when
absent) into the :class:`~dlsched.runner.Experiment` it means, refusing — with a message that
names the flag — a value or a combination a run cannot honour: an option given with
``--preset`` that the preset fixes, power options without a power manager, ``--backfill`` for a
policy that does not backfill, ``--queue-map`` without ``--queues``.

This module knows nothing of the command line's library (typer): :mod:`dlsched.cli.run_options`
turns these definitions into typer options.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from dlsched.keyvalue import parse_pairs

if TYPE_CHECKING:
    from dlsched.runner import Experiment

Kind = Literal["str", "int", "float", "bool", "list", "pairs"]
"""``list``: values given repeated or comma-separated; ``pairs``: ``KEY=VALUE`` items, repeated."""


@dataclass(frozen=True)
class RunOption:
    """One option of a run (module docstring)."""

    name: str
    kind: Kind
    default: Any
    help: str
    section: str
    flag: str | None = None
    """The command-line flag when it is not ``--`` + the name with dashes."""
    axis: bool = False
    """In a sweep, several values of it make cells (one per value)."""

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")


def _o(name: str, kind: Kind, default: Any, help: str, section: str, **more: Any) -> RunOption:
    return RunOption(name, kind, default, help, section, **more)


RUN_OPTIONS: tuple[RunOption, ...] = (
    _o("trace", "str", None, "Trace file (any supported format, or Parquet).", "trace", axis=True),
    _o(
        "cluster",
        "str",
        None,
        "Built-in name, TOML file, or shorthand 32x8.",
        "trace",
        axis=True,
    ),
    _o(
        "preset",
        "str",
        None,
        "A named setup (dlsched preset list) instead of --trace/--cluster.",
        "trace",
    ),
    _o(
        "load_scale",
        "float",
        None,
        "With --preset: arrivals L times faster (default: the preset's).",
        "trace",
        axis=True,
    ),
    _o("trace_format", "str", None, "Trace format (default: detect).", "trace", flag="--format"),
    _o("skip_bad_rows", "bool", False, "Drop bad trace rows (reported).", "trace"),
    _o("start", "str", None, "Only jobs submitted at/after (seconds, or a date).", "selection"),
    _o("end", "str", None, "Only jobs submitted before (seconds, or a date).", "selection"),
    _o("vc", "list", (), "Only these VCs (repeated or comma-separated).", "selection"),
    _o("gpu_only", "bool", False, "Only jobs that use GPUs.", "selection"),
    _o("subsample", "float", None, "Keep a fraction (<1) or a count (>=1) of jobs.", "selection"),
    _o("submit_scale", "float", 1.0, "Multiply submit times.", "selection"),
    _o(
        "deadlines",
        "str",
        None,
        "LOW:HIGH: give every job the deadline submit + U(LOW, HIGH) × its run time "
        "(ElasticFlow's method, e.g. 0.5:1.5; drawn with --seed), replacing the trace's.",
        "selection",
    ),
    _o(
        "best_effort",
        "float",
        0.0,
        "With --deadlines: the probability that a job gets no deadline (best effort).",
        "selection",
    ),
    _o(
        "workloads",
        "str",
        None,
        "lucid: give every GPU job that names no application a workload (model, batch size, "
        "precision) drawn from the Lucid co-location profiles (with --seed), for interference.",
        "selection",
    ),
    _o(
        "policy",
        "str",
        "fifo",
        "Policy (dlsched list policies).",
        "policy",
        axis=True,
    ),
    _o("policy_opt", "pairs", (), "Policy option KEY=VALUE (repeatable).", "policy"),
    _o(
        "kind_policy",
        "pairs",
        (),
        "KIND=POLICY: schedule the trace's rigid, elastic or ps jobs with another policy "
        "(repeatable); its options are --policy-opt KIND.KEY=VALUE.",
        "policy",
    ),
    _o(
        "backfill",
        "bool",
        False,
        "Non-preemptive policies: backfill instead of blocking.",
        "policy",
    ),
    _o("estimator", "str", None, "Duration estimator for policies that need one (qssf).", "policy"),
    _o("seed", "int", 0, "Seed for every random choice.", "policy", axis=True),
    _o(
        "no_partitions",
        "bool",
        False,
        "Pool all VCs into one partition.",
        "placement",
        flag="--no-partitions",
    ),
    _o(
        "placement",
        "str",
        None,
        "consolidate (default), pack, spread, random or topology (dlsched list placements).",
        "placement",
        axis=True,
    ),
    _o(
        "placement_opt",
        "pairs",
        (),
        "Placement option KEY=VALUE (repeatable); topology: required=LEVEL or "
        "preferred=LEVEL, LEVEL node, rack or block.",
        "placement",
    ),
    _o(
        "comm_model",
        "str",
        None,
        "tiers: rigid jobs spread over nodes, racks or blocks run slower (assumed factors, "
        "docs/topology.md); default: placement does not change run times.",
        "placement",
    ),
    _o(
        "restart_cost",
        "str",
        None,
        "Restart cost of every job: helios (7/30/60 s), pollux (30 s, also at the first "
        "start), smd (30 s) or none (default: each job kind's own).",
        "faults",
    ),
    _o(
        "checkpoint_interval",
        "float",
        3600.0,
        "Seconds between a running job's checkpoints (0: none).",
        "faults",
    ),
    _o("mtbf", "float", None, "Mean time between failures per node (s).", "faults"),
    _o("mttr", "float", 3600.0, "Mean time to repair a node (s).", "faults"),
    _o("faults", "str", None, "CSV node,fail_time,repair_time of outages.", "faults"),
    _o("timeline_step", "float", 60.0, "Timeline sampling step (s).", "output"),
    _o(
        "power_manager",
        "str",
        None,
        "Node power manager: ces or reactive (default: nodes always on).",
        "power",
    ),
    _o("power_opt", "pairs", (), "Power manager option KEY=VALUE (repeatable).", "power"),
    _o("wake_latency", "float", 300.0, "Seconds a powered-off node takes to boot.", "power"),
    _o(
        "power_baseline",
        "bool",
        True,
        "With --power-manager: also run without it and report the difference.",
        "power",
    ),
    _o(
        "queues",
        "str",
        None,
        "Kueue manifests (YAML file, directory or bundled name): admission by quota first.",
        "queues",
        axis=True,
    ),
    _o(
        "queue_map",
        "str",
        None,
        "With --queues: TOML mapping VCs/users to LocalQueues (default: by VC).",
        "queues",
    ),
    _o(
        "admission_clock",
        "str",
        "cycle",
        "With --queues: 'cycle' (Kueue's scheduling cycles: one head per ClusterQueue per "
        "cycle, preemptors admitted once their victims terminated) or 'fixpoint' (every "
        "admission of an instant at once).",
        "queues",
    ),
    _o(
        "cycle_period",
        "float",
        0.0,
        "With --queues and the cycle clock: seconds between scheduling cycles that make "
        "progress (0: back to back, as Kueue's cycles of a few milliseconds).",
        "queues",
    ),
    _o(
        "termination_grace",
        "float",
        0.0,
        "With --queues and the cycle clock: seconds an evicted job takes to terminate, its "
        "quota held until then (Kubernetes allows up to terminationGracePeriodSeconds).",
        "queues",
    ),
)
ADMISSION_CLOCKS = ("cycle", "fixpoint")
BY_NAME: Mapping[str, RunOption] = {o.name: o for o in RUN_OPTIONS}
AXES: tuple[str, ...] = tuple(o.name for o in RUN_OPTIONS if o.axis)
BACKFILL_OPTION = "allow_backfill"
PRESET_FIXES: tuple[str, ...] = ("trace", "cluster", "placement", "trace_format", "skip_bad_rows")
PRESET_FIXES += ("start", "end", "vc", "gpu_only", "subsample", "submit_scale")
PRESET_FIXES += ("deadlines", "best_effort", "workloads")
"""What a preset sets itself: giving one of these beside ``--preset`` is refused."""


def flag(name: str) -> str:
    """The command-line flag of option ``name``."""
    return BY_NAME[name].cli_flag


def defaults() -> dict[str, Any]:
    """Every option at its default."""
    return {o.name: o.default for o in RUN_OPTIONS}


def is_default(name: str, value: Any) -> bool:
    """Whether ``value`` is option ``name``'s default (an empty list counts as the default)."""
    default = BY_NAME[name].default
    if BY_NAME[name].kind in ("list", "pairs"):
        return not value
    return bool(value == default)


def pairs(items: Sequence[str], flag_name: str) -> dict[str, str]:
    """Repeated ``KEY=VALUE`` items of ``flag_name`` (:func:`dlsched.keyvalue.parse_pairs`)."""
    return parse_pairs(items, flag_name)


def check_queue_options(v: Mapping[str, Any]) -> None:
    """ValueError naming the flag for a queue option a run cannot honour."""
    if v["queue_map"] is not None and v["queues"] is None:
        raise ValueError("--queue-map maps jobs to the LocalQueues of --queues; give --queues")
    clock = v["admission_clock"]
    if clock not in ADMISSION_CLOCKS:
        raise ValueError(f"--admission-clock: expected cycle or fixpoint, got {clock!r}")
    for name in ("cycle_period", "termination_grace"):
        value = v[name]
        if not 0 <= value < 1e9:
            raise ValueError(f"{flag(name)}: expected seconds >= 0, got {value}")
        if value and v["queues"] is None:
            raise ValueError(f"{flag(name)} applies to admission by --queues; give --queues")
        if value and clock != "cycle":
            raise ValueError(
                f"{flag(name)} applies to the cycle clock, not --admission-clock {clock}"
            )


def experiment_from(given: Mapping[str, Any]) -> Experiment:
    """The experiment ``given`` (option name → value; absent options take their defaults)
    describes. ValueError naming the flag for an unknown option, a value of the wrong type, or
    a combination a run cannot honour (module docstring)."""
    unknown = sorted(set(given) - set(BY_NAME))
    if unknown:
        raise ValueError(f"unknown run option(s) {unknown}; known: {sorted(BY_NAME)}")
    # The runner brings the simulator: imported when an experiment is made, not with the
    # options (which every command's help reads).
    from dlsched.runner import Experiment, Selection
    from dlsched.sim.config import CheckpointConfig, FaultConfig, PowerConfig, SimConfig

    v = {**defaults(), **given}
    check_names(v)
    options = pairs(v["policy_opt"], flag("policy_opt"))
    if v["backfill"]:
        check_backfill(v["policy"])
        options[BACKFILL_OPTION] = "true"
    check_power_options(v)
    check_queue_options(v)
    config = SimConfig(
        policy=v["policy"],
        policy_options=options,
        kind_policies=pairs(v["kind_policy"], flag("kind_policy")),
        placement=v["placement"] or "consolidate",
        placement_options=pairs(v["placement_opt"], flag("placement_opt")),
        comm_model=v["comm_model"],
        estimator=v["estimator"],
        seed=v["seed"],
        use_partitions=not v["no_partitions"],
        checkpoint=CheckpointConfig(restart=v["restart_cost"], interval_s=v["checkpoint_interval"]),
        faults=FaultConfig(file=v["faults"], mtbf_s=v["mtbf"], mttr_s=v["mttr"]),
        timeline_step_s=v["timeline_step"],
        power=PowerConfig(
            manager=v["power_manager"],
            manager_options=pairs(v["power_opt"], flag("power_opt")),
            wake_latency_s=v["wake_latency"],
            compare_baseline=v["power_baseline"],
        ),
        queues=v["queues"],
        queue_map=v["queue_map"],
        admission_clock=v["admission_clock"],
        cycle_period_s=v["cycle_period"],
        termination_grace_s=v["termination_grace"],
    )
    if v["preset"] is not None:
        fixed = [flag(name) for name in PRESET_FIXES if not is_default(name, v[name])]
        if fixed:
            raise ValueError(
                f"--preset fixes the trace, cluster, job selection and placement; drop "
                f"{', '.join(fixed)} (or give --trace and --cluster instead of --preset)"
            )
        from dlsched.presets import get_preset

        return get_preset(v["preset"]).experiment(config, v["load_scale"])
    if v["trace"] is None or v["cluster"] is None:
        raise ValueError("give --trace and --cluster, or --preset")
    if v["load_scale"] is not None:
        raise ValueError("--load-scale applies to --preset only; use --submit-scale")
    selection = Selection(
        start=v["start"],
        end=v["end"],
        vcs=tuple(v["vc"]),
        gpu_only=v["gpu_only"],
        subsample=v["subsample"],
        submit_scale=v["submit_scale"],
        deadlines=v["deadlines"],
        best_effort=v["best_effort"],
        workloads=v["workloads"],
    )
    return Experiment(
        v["trace"], v["cluster"], config, selection, v["trace_format"], v["skip_bad_rows"]
    )


def _unknown(kind: str, flag_name: str, name: str, known: Sequence[str]) -> ValueError:
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ";"
    return ValueError(
        f"{flag_name}: unknown {kind} {name!r}{hint} available: {', '.join(sorted(set(known)))}"
    )


def check_names(v: Mapping[str, Any]) -> None:
    """The policy, kind policies, placement, estimator and power manager named exist; else a
    ValueError naming the flag, the closest name and every available one (checked before any
    trace is read)."""
    from dlsched.perf.duration.registry import estimators
    from dlsched.perf.model import KIND_NAMES
    from dlsched.placement.registry import placers
    from dlsched.power.registry import power_managers
    from dlsched.sim.groups import policy_catalog

    every = [name for name, _, _ in policy_catalog()]
    named = [(flag("policy"), v["policy"])]
    for kind, policy in pairs(v["kind_policy"], flag("kind_policy")).items():
        if kind not in KIND_NAMES:
            raise _unknown("job kind", flag("kind_policy"), kind, list(KIND_NAMES))
        named.append((flag("kind_policy"), policy))
    for flag_name, name in named:
        if name not in every:
            raise _unknown("policy", flag_name, name, every)
    checks = (
        ("placement", "placement", placers),
        ("estimator", "estimator", estimators),
        ("power_manager", "power manager", power_managers),
    )
    for option, kind, registry in checks:
        name = v[option]
        if name is not None and name not in (known := list(registry())):
            raise _unknown(kind, flag(option), name, known)


def _backfills(cls: type) -> bool:
    return dataclasses.is_dataclass(cls) and any(
        f.name == BACKFILL_OPTION for f in dataclasses.fields(cls)
    )


def check_backfill(policy: str) -> None:
    """``--backfill`` exists only for the non-preemptive policies; say so by name (the policy's
    own error would name an ``allow_backfill`` option the user never typed)."""
    from dlsched.policy.registry import policies
    from dlsched.sim.groups import policy_catalog

    found = policies()
    if policy in found and _backfills(found[policy]):
        return
    if policy not in found and policy not in {name for name, _, _ in policy_catalog()}:
        return  # an unknown name is reported, with the valid ones, when the policy is built
    able = sorted(name for name, cls in found.items() if _backfills(cls))
    raise ValueError(
        f"--backfill does not apply to policy {policy!r}; policies that backfill: {', '.join(able)}"
    )


def check_power_options(v: Mapping[str, Any]) -> None:
    """The power options need ``--power-manager``: without one every node is always on, so
    they would change nothing (refused, naming the option, rather than ignored)."""
    if v["power_manager"] is not None:
        return
    given = [
        flag(n) for n in ("power_opt", "wake_latency", "power_baseline") if not is_default(n, v[n])
    ]
    if given:
        shown = ["--no-power-baseline" if g == "--power-baseline" else g for g in given]
        raise ValueError(
            f"{', '.join(shown)}: needs --power-manager (without one every node stays on)"
        )
