"""ClusterState time-sharing (co-location): can_join, join, leave and the ``shared`` set.

The contract (module docstring of :mod:`dlsched.cluster.state`): a second job may join GPUs
that one job holds whole (free share 0, not shared yet), taking its own CPUs and memory;
whichever of the two stops first calls ``leave`` (the GPUs stay held), the last ``release``;
releasing a shared GPU is refused; a tentative block undoes joins and leaves too. A stateful
Hypothesis test checks the bookkeeping against a model over random allocate, join, leave,
release, node failure and tentative sequences on a ``2x4`` cluster.
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from dlsched.cluster.shorthand import parse_shorthand
from dlsched.cluster.spec import ClusterSpec
from dlsched.cluster.state import WHOLE, ClusterState, OverCommitError, Placement

CPUS = 16.0
MEM = 65536.0


def tracked(shorthand: str = "2x4", cpus: float = CPUS, mem: float = MEM) -> ClusterSpec:
    """The shorthand's cluster with ``cpus`` and ``mem`` MiB on every node (the shorthand
    itself tracks neither)."""
    base = parse_shorthand(shorthand)
    nodes = tuple(replace(n, cpus=cpus, memory_mib=mem) for n in base.nodes)
    return ClusterSpec(base.name, nodes, base.description, base.source)


def snapshot(state: ClusterState) -> tuple[Any, ...]:
    """Everything allocate, join, leave, release and health change, in comparable form."""
    return (
        [list(f) for f in state.free_milli],
        list(state.free_whole),
        list(state.free_cpus),
        list(state.free_mem),
        list(state.pool_used_milli),
        list(state.pool_up_gpus),
        list(state.node_up),
        sorted(state.shared),
        [dict(p) for p in state.partial_nodes],
        [[state.bucket_nodes(p, k) for k in range(len(b))] for p, b in enumerate(state.buckets)],
    )


@pytest.fixture
def state() -> ClusterState:
    """``2x4`` with 16 CPUs and 64 GiB per node."""
    return ClusterState(tracked())


PAIR: Placement = ((0, (0, 1)),)
"""Two GPUs of node 0."""
WIDE: Placement = ((0, (2,)), (1, (0, 1, 2)))
"""One GPU of node 0 and three of node 1 (CPUs and memory split 1:3)."""


# ---------------------------------------------------------------- shorthand cluster


def test_the_shorthand_cluster_is_two_untracked_nodes_of_four_gpus() -> None:
    s = ClusterState(parse_shorthand("2x4"))
    assert s.node_gpus == [4, 4] and s.total_gpus == 8
    assert s.cpu_cap == [float("inf")] * 2 and s.mem_cap == [float("inf")] * 2
    s.allocate(PAIR, WHOLE, 0.0, 0.0)
    # Untracked CPUs and memory never refuse a join.
    assert s.can_join(PAIR, 1e9, 1e12)
    s.join(PAIR, 1e9, 1e12)
    assert s.shared == {(0, 0), (0, 1)}


# ---------------------------------------------------------------- join


def test_join_shares_gpus_held_whole_and_takes_only_cpus_and_memory(state: ClusterState) -> None:
    state.allocate(PAIR, WHOLE, 4.0, 8192.0)
    gpus_before = (
        [list(f) for f in state.free_milli],
        list(state.free_whole),
        list(state.pool_used_milli),
        state.pool_free_gpus(0),
    )
    assert state.can_join(PAIR, 2.0, 4096.0)
    state.join(PAIR, 2.0, 4096.0)
    assert state.shared == {(0, 0), (0, 1)}
    # The GPUs are counted once: the share, whole count and pool use do not move.
    after = (
        [list(f) for f in state.free_milli],
        list(state.free_whole),
        list(state.pool_used_milli),
        state.pool_free_gpus(0),
    )
    assert after == gpus_before
    assert state.free_cpus == [10.0, CPUS] and state.free_mem == [MEM - 12288.0, MEM]


def test_join_over_two_nodes_splits_cpus_and_memory_by_gpus(state: ClusterState) -> None:
    state.allocate(WIDE, WHOLE, 0.0, 0.0)
    state.join(WIDE, 8.0, 4096.0)
    assert state.free_cpus == [CPUS - 2.0, CPUS - 6.0]
    assert state.free_mem == [MEM - 1024.0, MEM - 3072.0]
    assert state.shared == {(0, 2), (1, 0), (1, 1), (1, 2)}


def test_join_may_take_exactly_the_free_cpus_and_memory(state: ClusterState) -> None:
    state.allocate(PAIR, WHOLE, 12.0, MEM - 1000.0)
    assert state.can_join(PAIR, 4.0, 1000.0)
    state.join(PAIR, 4.0, 1000.0)
    assert state.free_cpus[0] == 0.0 and state.free_mem[0] == 0.0


def _held_by_half_jobs(state: ClusterState) -> None:
    state.allocate(PAIR, 500, 0.0, 0.0)


def _one_whole_one_free(state: ClusterState) -> None:
    state.allocate(((0, (0,)),), WHOLE, 0.0, 0.0)


def _already_shared(state: ClusterState) -> None:
    state.allocate(PAIR, WHOLE, 0.0, 0.0)
    state.join(PAIR, 0.0, 0.0)


def _one_of_them_shared(state: ClusterState) -> None:
    state.allocate(((0, (0,)),), WHOLE, 0.0, 0.0)
    state.join(((0, (0,)),), 0.0, 0.0)
    state.allocate(((0, (1,)),), WHOLE, 0.0, 0.0)


def _node_down(state: ClusterState) -> None:
    state.allocate(PAIR, WHOLE, 0.0, 0.0)
    # set_node_up refuses a node that holds jobs; mark it down directly to isolate the check.
    state.node_up[0] = False


def _cpus_short(state: ClusterState) -> None:
    state.allocate(PAIR, WHOLE, 12.5, 0.0)


def _memory_short(state: ClusterState) -> None:
    state.allocate(PAIR, WHOLE, 0.0, MEM - 999.0)


REFUSALS = {
    "gpus free": lambda s: None,
    "one held, one free": _one_whole_one_free,
    "partial milli share": _held_by_half_jobs,
    "already shared": _already_shared,
    "one of them shared": _one_of_them_shared,
    "node down": _node_down,
    "lacking cpus": _cpus_short,
    "lacking memory": _memory_short,
}


@pytest.mark.parametrize("setup", REFUSALS.values(), ids=list(REFUSALS))
def test_join_is_refused_and_changes_nothing(state: ClusterState, setup: Any) -> None:
    setup(state)
    before = snapshot(state)
    assert not state.can_join(PAIR, 4.0, 1000.0)
    with pytest.raises(OverCommitError, match="cannot take a second job"):
        state.join(PAIR, 4.0, 1000.0)
    assert snapshot(state) == before


@pytest.mark.parametrize("placement", [(), ((0, ()),), ((0, (0,)), (1, ()))])
def test_join_needs_gpus_in_every_entry(state: ClusterState, placement: Placement) -> None:
    state.allocate(((0, (0,)),), WHOLE, 0.0, 0.0)
    assert not state.can_join(placement, 0.0, 0.0)


def test_a_half_used_gpu_refuses_a_joiner_even_with_room_for_a_half_job(
    state: ClusterState,
) -> None:
    state.allocate(((0, (0,)),), 500, 0.0, 0.0)
    assert state.free_milli[0][0] == 500
    assert not state.can_join(((0, (0,)),), 0.0, 0.0)


def test_can_join_changes_nothing(state: ClusterState) -> None:
    state.allocate(PAIR, WHOLE, 1.0, 1.0)
    before = snapshot(state)
    assert state.can_join(PAIR, 1.0, 1.0)
    assert not state.can_join(PAIR, 100.0, 1.0)
    assert snapshot(state) == before


# ---------------------------------------------------------------- leave and release


@pytest.mark.parametrize("first", ["holder", "joiner"])
def test_the_gpus_are_freed_exactly_at_the_last_stop(state: ClusterState, first: str) -> None:
    initial = snapshot(state)
    holder, joiner = (3.0, 2048.0), (2.0, 1024.0)
    state.allocate(WIDE, WHOLE, *holder)
    state.join(WIDE, *joiner)
    held = [list(f) for f in state.free_milli], list(state.free_whole), state.pool_free_gpus(0)
    first_args, last_args = (holder, joiner) if first == "holder" else (joiner, holder)

    state.leave(WIDE, *first_args)
    assert state.shared == set()
    # The GPUs stay held by the other job; only the first job's CPUs and memory come back.
    assert ([list(f) for f in state.free_milli], list(state.free_whole)) == held[:2]
    assert state.pool_free_gpus(0) == held[2] == 4.0
    assert state.free_cpus == [CPUS - last_args[0] / 4, CPUS - 3 * last_args[0] / 4]
    assert state.free_mem == [MEM - last_args[1] / 4, MEM - 3 * last_args[1] / 4]
    assert not state.node_idle(0) and not state.node_idle(1)

    state.release(WIDE, WHOLE, *last_args)
    assert snapshot(state) == initial
    assert state.node_idle(0) and state.node_idle(1)


def test_after_a_leave_the_gpus_can_take_another_joiner(state: ClusterState) -> None:
    state.allocate(PAIR, WHOLE, 1.0, 1.0)
    state.join(PAIR, 1.0, 1.0)
    assert not state.can_join(PAIR, 1.0, 1.0)
    state.leave(PAIR, 1.0, 1.0)
    assert state.can_join(PAIR, 1.0, 1.0)
    state.join(PAIR, 1.0, 1.0)
    assert state.shared == {(0, 0), (0, 1)}


@pytest.mark.parametrize("who", ["holder", "joiner"])
def test_release_of_a_shared_gpu_is_refused(state: ClusterState, who: str) -> None:
    state.allocate(PAIR, WHOLE, 3.0, 300.0)
    state.join(PAIR, 2.0, 200.0)
    before = snapshot(state)
    args = (3.0, 300.0) if who == "holder" else (2.0, 200.0)
    with pytest.raises(OverCommitError, match="time-shared: leave"):
        state.release(PAIR, WHOLE, *args)
    assert snapshot(state) == before


def test_release_is_refused_when_any_one_gpu_of_the_placement_is_shared(
    state: ClusterState,
) -> None:
    state.allocate(PAIR, WHOLE, 0.0, 0.0)
    state.join(((0, (1,)),), 0.0, 0.0)
    before = snapshot(state)
    with pytest.raises(OverCommitError, match="GPU 1 of node-000 is time-shared"):
        state.release(PAIR, WHOLE, 0.0, 0.0)
    assert snapshot(state) == before


def test_leave_of_gpus_not_shared_is_refused(state: ClusterState) -> None:
    before = snapshot(state)
    with pytest.raises(OverCommitError, match="not time-shared"):
        state.leave(PAIR, 0.0, 0.0)
    state.allocate(PAIR, WHOLE, 0.0, 0.0)
    state.join(((0, (0,)),), 0.0, 0.0)
    held = snapshot(state)
    with pytest.raises(OverCommitError, match="not time-shared"):
        state.leave(PAIR, 0.0, 0.0)
    assert snapshot(state) == held
    state.leave(((0, (0,)),), 0.0, 0.0)
    with pytest.raises(OverCommitError, match="not time-shared"):
        state.leave(((0, (0,)),), 0.0, 0.0)
    state.release(PAIR, WHOLE, 0.0, 0.0)
    assert snapshot(state) == before


def test_a_node_with_shared_gpus_cannot_fail(state: ClusterState) -> None:
    state.allocate(PAIR, WHOLE, 0.0, 0.0)
    state.join(PAIR, 0.0, 0.0)
    state.leave(PAIR, 0.0, 0.0)
    with pytest.raises(OverCommitError, match="failed while holding jobs"):
        state.set_node_up(0, False)


# ---------------------------------------------------------------- tentative


def test_rollback_undoes_a_join_exactly(state: ClusterState) -> None:
    state.allocate(WIDE, WHOLE, 4.0, 1024.0)
    before = snapshot(state)
    with state.tentative():
        state.join(WIDE, 6.0, 2048.0)
        assert state.shared
    assert snapshot(state) == before and state.shared == set()


def test_rollback_undoes_a_leave_exactly(state: ClusterState) -> None:
    state.allocate(WIDE, WHOLE, 4.0, 1024.0)
    state.join(WIDE, 6.0, 2048.0)
    before = snapshot(state)
    with state.tentative():
        state.leave(WIDE, 4.0, 1024.0)
        assert state.shared == set()
    assert snapshot(state) == before
    assert state.shared == {(0, 2), (1, 0), (1, 1), (1, 2)}


def test_rollback_undoes_a_mixed_cycle_newest_first(state: ClusterState) -> None:
    """A cycle in which a pair ends (leave, then release), its GPUs go to a new job that
    another joins, and a partial share is taken: rollback restores every field exactly."""
    other: Placement = ((1, (3,)),)
    state.allocate(PAIR, WHOLE, 2.0, 512.0)
    state.join(PAIR, 1.5, 256.0)
    state.allocate(other, WHOLE, 1.0, 128.0)
    state.join(other, 0.25, 64.0)
    before = snapshot(state)
    with state.tentative():
        state.leave(PAIR, 2.0, 512.0)
        state.release(PAIR, WHOLE, 1.5, 256.0)
        state.allocate(((0, (0, 1, 2)),), WHOLE, 6.0, 3072.0)
        state.join(((0, (0, 1, 2)),), 3.0, 1536.0)
        state.leave(other, 0.25, 64.0)
        state.allocate(((0, (3,)),), 250, 0.5, 32.0)
        assert state.shared == {(0, 0), (0, 1), (0, 2)}
    assert snapshot(state) == before
    assert state.shared == {(0, 0), (0, 1), (1, 3)}


def test_rollback_after_an_error_inside_the_block(state: ClusterState) -> None:
    state.allocate(PAIR, WHOLE, 1.0, 1.0)
    before = snapshot(state)
    with pytest.raises(OverCommitError), state.tentative():
        state.join(PAIR, 1.0, 1.0)
        state.release(PAIR, WHOLE, 1.0, 1.0)
    assert snapshot(state) == before


def test_a_refused_join_or_leave_inside_a_block_is_not_undone(state: ClusterState) -> None:
    """Refusals change nothing, so they leave nothing to undo (a rollback of a refused join
    would otherwise leave() GPUs that are not shared)."""
    state.allocate(PAIR, WHOLE, 1.0, 1.0)
    before = snapshot(state)
    with state.tentative():
        with pytest.raises(OverCommitError):
            state.leave(PAIR, 1.0, 1.0)
        with pytest.raises(OverCommitError):
            state.join(PAIR, 100.0, 1.0)
    assert snapshot(state) == before


# ---------------------------------------------------------------- fractional shares and splits


def test_a_gpu_filled_by_two_fractional_jobs_refuses_a_joiner(state: ClusterState) -> None:
    one: Placement = ((0, (0,)),)
    state.allocate(one, 500, 0.0, 0.0)
    state.allocate(one, 500, 0.0, 0.0)
    assert state.free_milli[0][0] == 0
    assert not state.can_join(one, 0.0, 0.0)


def test_a_split_release_of_a_shared_gpu_is_refused(state: ClusterState) -> None:
    split = ((2.0, 512.0),)
    state.allocate(PAIR, WHOLE, 0.0, 0.0, split)
    state.join(PAIR, 1.0, 1.0)
    before = snapshot(state)
    with contextlib.suppress(OverCommitError):
        state.release(PAIR, WHOLE, 0.0, 0.0, split)
    assert snapshot(state) == before


# ---------------------------------------------------------------- stateful


NODES, GPUS = 2, 4
MACHINE_CPUS, MACHINE_MEM = 8.0, 1024.0
MILLIS = (WHOLE, WHOLE, 300, 500, 600)
"""Shares the machine allocates; two 500s fill a GPU that no job may then join."""
cpu_amounts = st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0, 4.5])
mem_amounts = st.sampled_from([0.0, 64.0, 256.0, 512.0])


@st.composite
def placements(draw: st.DrawFn) -> Placement:
    nodes = draw(st.sampled_from([(0,), (1,), (0, 1)]))
    return tuple(
        (n, tuple(sorted(draw(st.sets(st.integers(0, GPUS - 1), min_size=1))))) for n in nodes
    )


@dataclass
class Job:
    placement: Placement
    milli: int
    cpus: float
    mem: float

    def gpus(self) -> set[tuple[int, int]]:
        return {(n, g) for n, gs in self.placement for g in gs}


def shares(placement: Placement) -> list[tuple[int, Fraction]]:
    """Each entry's part of a job's CPUs and memory, as allocate and join split them."""
    if len(placement) == 1:
        return [(placement[0][0], Fraction(1))]
    total = sum(len(g) for _, g in placement)
    return [(n, Fraction(len(g), total)) for n, g in placement]


class TimeSharingMachine(RuleBasedStateMachine):
    """Random allocate/join/leave/release/failure/tentative sequences against a model: jobs
    with exact (Fraction) CPUs and memory, and which pairs of jobs time-share."""

    def __init__(self) -> None:
        super().__init__()
        self.state = ClusterState(tracked("2x4", MACHINE_CPUS, MACHINE_MEM))
        self.fresh = snapshot(ClusterState(tracked("2x4", MACHINE_CPUS, MACHINE_MEM)))
        self.jobs: dict[int, Job] = {}
        self.mate: dict[int, int] = {}
        self.cpus = [Fraction(MACHINE_CPUS)] * NODES
        self.mem = [Fraction(MACHINE_MEM)] * NODES
        self.up = [True] * NODES
        self.next_id = 0

    # ---- the model -------------------------------------------------------------------
    def holders(self, gpu: tuple[int, int]) -> list[int]:
        return [j for j, job in self.jobs.items() if gpu in job.gpus()]

    def used(self, gpu: tuple[int, int]) -> int:
        holders = self.holders(gpu)
        if any(j in self.mate for j in holders):
            return WHOLE
        return sum(self.jobs[j].milli for j in holders)

    def model_shared(self) -> set[tuple[int, int]]:
        return {g for j in self.mate for g in self.jobs[j].gpus()}

    def fits(self, placement: Placement, cpus: float, mem: float) -> bool | None:
        """Whether the CPUs and memory fit; None when too close to call (the state compares
        rounded floats with a 1e-9 tolerance)."""
        verdict: bool | None = True
        for node, part in shares(placement):
            for free, need in ((self.cpus[node], cpus), (self.mem[node], mem)):
                margin = free - Fraction(need) * part
                if margin < -1e-6:
                    return False
                if margin < 1e-6 and margin != 0:
                    verdict = None
        return verdict

    def take(self, placement: Placement, cpus: float, mem: float, sign: int) -> None:
        for node, part in shares(placement):
            self.cpus[node] -= sign * Fraction(cpus) * part
            self.mem[node] -= sign * Fraction(mem) * part

    def sole_whole(self) -> list[int]:
        """Jobs that hold their GPUs whole, alone: each may take a joiner."""
        return sorted(
            j
            for j, job in self.jobs.items()
            if job.milli == WHOLE
            and j not in self.mate
            and all(self.holders(g) == [j] for g in job.gpus())
        )

    def expect(self, gpu_ok: bool, fits: bool | None) -> bool | None:
        return False if not gpu_ok else fits

    def pick_placement(self, data: st.DataObject) -> Placement:
        """Half the time a running job's placement (so that GPUs are asked for twice, joined
        twice or probed while shared), else any GPUs."""
        reuse = bool(self.jobs) and data.draw(st.booleans(), label="reuse")
        if reuse:
            return self.jobs[data.draw(st.sampled_from(sorted(self.jobs)), label="of")].placement
        return data.draw(placements(), label="placement")

    def do_allocate(self, placement: Placement, milli: int, cpus: float, mem: float) -> None:
        gpu_ok = all(self.up[n] for n, _ in placement) and all(
            WHOLE - self.used((n, g)) >= milli for n, gs in placement for g in gs
        )
        expected = self.expect(gpu_ok, self.fits(placement, cpus, mem))
        before = snapshot(self.state)
        try:
            self.state.allocate(placement, milli, cpus, mem)
        except OverCommitError:
            assert expected is not True, (placement, milli, cpus, mem)
            assert snapshot(self.state) == before
            return
        assert expected is not False, (placement, milli, cpus, mem)
        self.jobs[self.next_id] = Job(placement, milli, cpus, mem)
        self.next_id += 1
        self.take(placement, cpus, mem, +1)

    def do_join(self, holder: int, cpus: float, mem: float) -> None:
        placement = self.jobs[holder].placement
        expected = self.expect(
            all(self.up[n] for n, _ in placement), self.fits(placement, cpus, mem)
        )
        can = self.state.can_join(placement, cpus, mem)
        assert expected is None or can == expected
        before = snapshot(self.state)
        if not can:
            with pytest.raises(OverCommitError):
                self.state.join(placement, cpus, mem)
            assert snapshot(self.state) == before
            return
        self.state.join(placement, cpus, mem)
        self.jobs[self.next_id] = Job(placement, WHOLE, cpus, mem)
        self.mate[holder], self.mate[self.next_id] = self.next_id, holder
        self.next_id += 1
        self.take(placement, cpus, mem, +1)

    def do_probe(self, placement: Placement, cpus: float, mem: float) -> None:
        gpu_ok = all(self.up[n] for n, _ in placement) and all(
            len(h := self.holders((n, g))) == 1
            and self.jobs[h[0]].milli == WHOLE
            and h[0] not in self.mate
            for n, gs in placement
            for g in gs
        )
        expected = self.expect(gpu_ok, self.fits(placement, cpus, mem))
        before = snapshot(self.state)
        can = self.state.can_join(placement, cpus, mem)
        assert expected is None or can == expected, (placement, cpus, mem)
        assert snapshot(self.state) == before
        if not can:
            with pytest.raises(OverCommitError):
                self.state.join(placement, cpus, mem)
            assert snapshot(self.state) == before

    def do_stop(self, j: int) -> None:
        """Job ``j`` stops: the first of a pair must leave (release refused), a lone job must
        release (leave refused)."""
        job = self.jobs[j]
        before = snapshot(self.state)
        if j in self.mate:
            with pytest.raises(OverCommitError):
                self.state.release(job.placement, job.milli, job.cpus, job.mem)
            assert snapshot(self.state) == before
            self.state.leave(job.placement, job.cpus, job.mem)
            del self.mate[self.mate.pop(j)]
        else:
            with pytest.raises(OverCommitError):
                self.state.leave(job.placement, job.cpus, job.mem)
            assert snapshot(self.state) == before
            self.state.release(job.placement, job.milli, job.cpus, job.mem)
        del self.jobs[j]
        self.take(job.placement, job.cpus, job.mem, -1)

    # ---- rules -------------------------------------------------------------------------
    @rule(data=st.data(), milli=st.sampled_from(MILLIS), cpus=cpu_amounts, mem=mem_amounts)
    def allocate(self, data: st.DataObject, milli: int, cpus: float, mem: float) -> None:
        self.do_allocate(self.pick_placement(data), milli, cpus, mem)

    @precondition(lambda self: bool(self.sole_whole()))
    @rule(data=st.data(), cpus=cpu_amounts, mem=mem_amounts)
    def join(self, data: st.DataObject, cpus: float, mem: float) -> None:
        self.do_join(data.draw(st.sampled_from(self.sole_whole()), label="holder"), cpus, mem)

    @rule(data=st.data(), cpus=cpu_amounts, mem=mem_amounts)
    def probe_join(self, data: st.DataObject, cpus: float, mem: float) -> None:
        """can_join of any GPUs agrees with the model; a refused join changes nothing."""
        self.do_probe(self.pick_placement(data), cpus, mem)

    @precondition(lambda self: bool(self.jobs))
    @rule(data=st.data())
    def stop(self, data: st.DataObject) -> None:
        self.do_stop(data.draw(st.sampled_from(sorted(self.jobs)), label="job"))

    @rule(node=st.integers(0, NODES - 1), up=st.booleans())
    def set_node_up(self, node: int, up: bool) -> None:
        holds = any(any(n == node for n, _ in job.placement) for job in self.jobs.values())
        before = snapshot(self.state)
        if not up and holds and self.up[node]:
            with pytest.raises(OverCommitError):
                self.state.set_node_up(node, up)
            assert snapshot(self.state) == before
            return
        self.state.set_node_up(node, up)
        self.up[node] = up

    @rule(data=st.data())
    def tentative(self, data: st.DataObject) -> None:
        """A few random changes inside a tentative block leave the state as it was."""
        saved = copy.deepcopy((self.jobs, self.mate, self.cpus, self.mem, self.next_id))
        before = snapshot(self.state)
        moves = data.draw(st.lists(st.sampled_from(["allocate", "join", "stop"]), max_size=5))
        try:
            with self.state.tentative():
                for move in moves:
                    if move == "allocate":
                        placement = self.pick_placement(data)
                        milli = data.draw(st.sampled_from(MILLIS))
                        self.do_allocate(
                            placement, milli, data.draw(cpu_amounts), data.draw(mem_amounts)
                        )
                    elif move == "join" and self.sole_whole():
                        holder = data.draw(st.sampled_from(self.sole_whole()))
                        self.do_join(holder, data.draw(cpu_amounts), data.draw(mem_amounts))
                    elif move == "stop" and self.jobs:
                        self.do_stop(data.draw(st.sampled_from(sorted(self.jobs))))
                    self.consistent()
        finally:
            self.jobs, self.mate, self.cpus, self.mem, self.next_id = saved
        after = snapshot(self.state)
        # CPUs and memory may differ in the last bits (x - a + a); everything else exactly.
        for i, (a, b) in enumerate(zip(after, before, strict=True)):
            if i in (2, 3):
                assert a == pytest.approx(b, abs=1e-9)
            else:
                assert a == b

    # ---- invariants --------------------------------------------------------------------
    @invariant()
    def consistent(self) -> None:
        s = self.state
        for node in range(NODES):
            for g in range(GPUS):
                holders = self.holders((node, g))
                whole = [j for j in holders if self.jobs[j].milli == WHOLE]
                # At most two jobs time-share a GPU, and only jobs that take it whole.
                assert len(whole) <= 2 and (not whole or whole == holders)
                fm = s.free_milli[node][g]
                assert 0 <= fm <= WHOLE
                assert fm == WHOLE - self.used((node, g))
                if (node, g) in s.shared:
                    assert fm == 0 and len(holders) == 2
            assert s.free_whole[node] == sum(f == WHOLE for f in s.free_milli[node])
            for free, cap, model in (
                (s.free_cpus[node], s.cpu_cap[node], self.cpus[node]),
                (s.free_mem[node], s.mem_cap[node], self.mem[node]),
            ):
                assert -1e-6 <= free <= cap
                assert free == pytest.approx(float(model), abs=1e-6)
        assert s.shared == self.model_shared()
        assert s.pool_used_milli[0] == sum(WHOLE - f for fs in s.free_milli for f in fs)
        assert s.node_up == self.up

    def teardown(self) -> None:
        """Stopping every job (the first of each pair leaves) gives back an empty cluster."""
        for j in sorted(self.jobs):
            if j in self.jobs:
                self.do_stop(j)
        for node in range(NODES):
            self.state.set_node_up(node, True)
        after = snapshot(self.state)
        for i, (a, b) in enumerate(zip(after, self.fresh, strict=True)):
            if i in (2, 3):
                assert a == pytest.approx(b, abs=1e-6)
            else:
                assert a == b


TimeSharingMachine.TestCase.settings = settings(
    max_examples=120, stateful_step_count=30, deadline=None, derandomize=True
)
test_time_sharing_state_machine = TimeSharingMachine.TestCase


def test_a_node_listed_twice_in_one_placement_is_refused(state: ClusterState) -> None:
    before = snapshot(state)
    with pytest.raises(OverCommitError, match="listed twice"):
        state.allocate(((0, (0,)), (0, (0,))), WHOLE, 0.0, 0.0)
    assert snapshot(state) == before
