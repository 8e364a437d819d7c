"""What elastic policies see and answer: allocations, job and cluster views."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from dlsched.cluster.spec import ClusterSpec
from dlsched.perf.perfbook import variant_for_gpu_type


@dataclass(frozen=True, slots=True)
class Allocation:
    """GPUs held by one job and how it splits its batch.

    ``gpus`` lists ``(node index, GPU count)`` pairs, node indices increasing and counts
    positive. ``local_bsz`` is examples per GPU per micro-step, ``accum_steps`` the extra
    micro-steps per optimizer step. With ``adaptive`` the simulator re-picks the
    goodput-maximizing batch for the job's current epoch at every epoch boundary (the policy's
    ``local_bsz``/``accum_steps`` then only hold until the first one).
    """

    gpus: tuple[tuple[int, int], ...]
    local_bsz: int
    accum_steps: int = 0
    adaptive: bool = False

    @property
    def num_gpus(self) -> int:
        return sum(c for _, c in self.gpus)

    @property
    def num_nodes(self) -> int:
        return len(self.gpus)

    @property
    def placement(self) -> tuple[int, ...]:
        """GPUs per node in node order (the replica counts of the profiles' placements)."""
        return tuple(c for _, c in self.gpus)

    def global_bsz(self) -> int:
        return self.num_gpus * self.local_bsz * (self.accum_steps + 1)


@dataclass(frozen=True, slots=True)
class NodeView:
    """One machine of the cluster. ``gpus`` is how many of its GPUs the policy may hold at
    this round (0 for a failed or powered-off node; less when other schedulers' jobs hold some),
    ``size`` how many it has (what per-node shapes, e.g. GPUs per node, are computed from)."""

    index: int
    name: str
    gpus: int
    gpu_type: str  # as the cluster names it
    variant: str  # the profile variant its step times come from (dlsched.perf.profiles)
    size: int = 0

    def __post_init__(self) -> None:
        if self.size == 0:
            object.__setattr__(self, "size", self.gpus)


@dataclass(frozen=True, slots=True)
class ClusterView:
    """The cluster an elastic policy schedules: nodes in order, their GPU types."""

    nodes: tuple[NodeView, ...]

    @property
    def total_gpus(self) -> int:
        return sum(n.gpus for n in self.nodes)

    @property
    def variants(self) -> tuple[str, ...]:
        """Distinct profile variants, in node order."""
        return tuple(dict.fromkeys(n.variant for n in self.nodes))

    def gpus_of_variant(self, variant: str) -> int:
        """GPUs of ``variant`` the policy may hold now."""
        return sum(n.gpus for n in self.nodes if n.variant == variant)

    def size_of_variant(self, variant: str) -> int:
        """GPUs of ``variant`` the cluster has."""
        return sum(n.size for n in self.nodes if n.variant == variant)

    def gpus_per_node(self, variant: str) -> int:
        """The most GPUs a node of ``variant`` has."""
        return max(n.size for n in self.nodes if n.variant == variant)

    @property
    def main_variant(self) -> str:
        """The variant with the most GPUs (ties: first in node order); what a
        heterogeneity-agnostic policy models every GPU as."""
        variants = self.variants
        return max(variants, key=lambda v: (self.size_of_variant(v), -variants.index(v)))


@dataclass(frozen=True, slots=True)
class JobInfo:
    """What a policy sees of one active job at a round.

    ``progress`` is in statistically efficient steps (see :mod:`dlsched.perf.efficiency`),
    ``total_progress`` what finishes the job. ``throughputs`` maps a GPU count to the last
    (at most 5) measured throughputs, examples per second, one per round run at that count.
    ``metrics`` holds the validation metric observed at the end of each finished epoch and
    ``samples_at_epoch`` the examples processed by then. ``last_change`` is when the job's GPUs
    last changed (None if it never ran) and ``epoch_at_change`` its epoch then. ``deadline``
    is when it should finish (absolute seconds; None: best effort). A job of the ElasticFlow
    tables (``application`` ``elasticflow/<model>``) counts its progress in iterations.
    """

    name: str
    index: int  # the job's row in the workload (a stable tie-break)
    application: str
    submit_time: float
    requested_gpus: int
    requested_bsz: int
    attained_service: float  # GPU-seconds held so far
    progress: float
    total_progress: float
    epoch: int
    num_epochs: int
    samples: float  # examples processed so far
    allocation: Allocation | None
    restarts: int
    last_change: float | None
    epoch_at_change: int
    max_gpus_seen: int
    epoch_size: float  # examples per epoch
    throughputs: Mapping[int, tuple[float, ...]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    metrics: tuple[float, ...] = ()
    samples_at_epoch: tuple[float, ...] = ()
    deadline: float | None = None

    @property
    def gpus(self) -> int:
        return 0 if self.allocation is None else self.allocation.num_gpus

    @property
    def remaining_progress(self) -> float:
        return max(self.total_progress - self.progress, 0.0)


@dataclass(frozen=True, slots=True)
class FinishedInfo:
    """A job that finished, as policies learn it (e.g. to refit a progress predictor)."""

    job: JobInfo  # its view at completion (progress = total)
    end_time: float


def cluster_view(spec: ClusterSpec) -> ClusterView:
    """The nodes with GPUs of ``spec`` (positions in node order), each with the profile
    variant of its GPU type; ValueError for a cluster without GPUs or a GPU type without
    profiles."""
    nodes = [n for n in spec.nodes if n.gpus > 0]
    if not nodes:
        raise ValueError(f"cluster {spec.name!r} has no GPUs")
    return ClusterView(
        tuple(
            NodeView(i, n.name, n.gpus, n.gpu_type, variant_for_gpu_type(n.gpu_type))
            for i, n in enumerate(nodes)
        )
    )
