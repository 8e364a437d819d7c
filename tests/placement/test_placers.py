"""Placers: consolidate (Helios best fit), spread, random; and the safety property of all."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.cluster.spec import ClusterSpec, NodeSpec
from dlsched.cluster.state import WHOLE, ClusterState, Demand, OverCommitError, Placement
from dlsched.placement.base import Placer
from dlsched.placement.registry import create_placer, placers


def uniform(nodes: int, gpus: int = 8, **kw: Any) -> ClusterState:
    return ClusterState(
        ClusterSpec("u", tuple(NodeSpec(f"n{i}", gpus, **kw) for i in range(nodes)))
    )


def use(state: ClusterState, node: int, gpus: int, milli: int = WHOLE, cpus: float = 0.0) -> None:
    """Take the first ``gpus`` wholly free GPUs of ``node``."""
    free = [g for g, f in enumerate(state.free_milli[node]) if f == WHOLE][:gpus]
    assert len(free) == gpus
    state.allocate(((node, tuple(free)),), milli, cpus, 0.0)


def place(name: str, state: ClusterState, demand: Demand, seed: int = 0) -> Placement | None:
    return create_placer(name, seed).place(state, 0, demand)


def test_registry_lists_the_three_placers() -> None:
    assert {"consolidate", "spread", "random"} <= set(placers())
    with pytest.raises(ValueError, match="unknown placement 'nope'; available: "):
        create_placer("nope")


# ---- consolidate -----------------------------------------------------------------------------


@pytest.fixture
def mixed() -> ClusterState:
    """Four 8-GPU nodes with 5, 2, 2 and 8 GPUs free."""
    state = uniform(4)
    use(state, 0, 3)
    use(state, 1, 6)
    use(state, 2, 6)
    return state


def test_consolidate_empty_cluster_picks_lowest_index() -> None:
    assert place("consolidate", uniform(3), Demand(2)) == ((0, (0, 1)),)


@pytest.mark.parametrize(
    ("gpus", "expected"),
    [
        # Fewest free GPUs that fit; nodes 1 and 2 tie with 2 free -> lowest index, node 1.
        (1, ((1, (6,)),)),
        (2, ((1, (6, 7)),)),
        (3, ((0, (3, 4, 5)),)),
        (5, ((0, (3, 4, 5, 6, 7)),)),
        (6, ((3, (0, 1, 2, 3, 4, 5)),)),
        (8, ((3, tuple(range(8))),)),
    ],
)
def test_consolidate_single_node_best_fit(
    mixed: ClusterState, gpus: int, expected: Placement
) -> None:
    assert place("consolidate", mixed, Demand(gpus)) == expected


def test_consolidate_multi_node_whole_nodes_plus_best_fit_remainder(mixed: ClusterState) -> None:
    # 9 GPUs: the only empty node (3) whole, then 1 GPU on the best fit of the rest (node 1).
    assert place("consolidate", mixed, Demand(9)) == ((3, tuple(range(8))), (1, (6,)))
    # 11 GPUs: node 3 whole, 3 more on node 0 (5 free; nodes 1 and 2 have only 2).
    assert place("consolidate", mixed, Demand(11)) == ((3, tuple(range(8))), (0, (3, 4, 5)))
    # 16 GPUs need two empty nodes: there is one.
    assert place("consolidate", mixed, Demand(16)) is None
    # 14 GPUs: node 3 whole, then 6 more on one node: none has 6 left.
    assert place("consolidate", mixed, Demand(14)) is None


def test_consolidate_multiple_of_node_size_takes_lowest_index_empty_nodes() -> None:
    state = uniform(5)
    use(state, 1, 1)
    assert place("consolidate", state, Demand(16)) == ((0, tuple(range(8))), (2, tuple(range(8))))
    # 20 GPUs: whole nodes 0 and 2, then 4 GPUs best fit: node 1 (7 free) beats the empty ones.
    assert place("consolidate", state, Demand(20)) == (
        (0, tuple(range(8))),
        (2, tuple(range(8))),
        (1, (1, 2, 3, 4)),
    )


def test_consolidate_remainder_uses_an_empty_node_when_no_partial_fits() -> None:
    state = uniform(3)
    use(state, 0, 7)
    # 10 GPUs: node 1 whole; the remaining 2 do not fit node 0 (1 free), so node 2.
    assert place("consolidate", state, Demand(10)) == ((1, tuple(range(8))), (2, (0, 1)))


def test_consolidate_returns_none_when_fragmented() -> None:
    state = uniform(4)
    for node in range(4):
        use(state, node, 4)  # 16 GPUs free in all, 4 per node
    assert state.pool_free_gpus(0) == 16
    assert place("consolidate", state, Demand(5)) is None
    assert place("consolidate", state, Demand(8)) is None
    assert place("consolidate", state, Demand(12)) is None
    assert place("consolidate", state, Demand(4)) == ((0, (4, 5, 6, 7)),)


def test_consolidate_skips_down_nodes_and_nodes_without_cpus() -> None:
    state = uniform(3, cpus=16.0)
    state.set_node_up(0, False)
    use(state, 1, 4, cpus=12.0)  # node 1: 4 GPUs free but only 4 CPUs
    assert place("consolidate", state, Demand(2)) == ((1, (4, 5)),)
    # 8 CPUs for 2 GPUs: node 1 lacks them, node 2 has them.
    assert place("consolidate", state, Demand(2, cpus=8.0)) == ((2, (0, 1)),)


def test_consolidate_honours_gpu_type() -> None:
    nodes = (NodeSpec("a", 4, gpu_type="k80"), NodeSpec("b", 4, gpu_type="v100"))
    state = ClusterState(ClusterSpec("t", nodes))
    assert place("consolidate", state, Demand(2, gpu_type="V100")) == ((1, (0, 1)),)
    assert place("consolidate", state, Demand(2, gpu_type="p100")) is None


def test_consolidate_fractions_pack_best_fit_on_partly_used_gpus() -> None:
    state = uniform(2, gpus=2)
    use(state, 0, 1, milli=500)  # node 0 GPU 0: 500 left
    use(state, 1, 1, milli=700)  # node 1 GPU 0: 300 left
    # 250: both partly used GPUs fit; node 1's has the least left.
    assert place("consolidate", state, Demand(1, milli=250)) == ((1, (0,)),)
    # 400: only node 0's partly used GPU fits.
    assert place("consolidate", state, Demand(1, milli=400)) == ((0, (0,)),)
    # 600: no partly used GPU fits; a whole GPU on the node with the fewest whole free (tie: 0).
    assert place("consolidate", state, Demand(1, milli=600)) == ((0, (1,)),)


# ---- spread ----------------------------------------------------------------------------------


def test_spread_puts_each_gpu_on_a_distinct_node_when_it_can() -> None:
    state = uniform(4)
    assert place("spread", state, Demand(4)) == tuple((n, (0,)) for n in range(4))
    # 6 GPUs on 4 equally free nodes: one each, then nodes 0 and 1 again.
    assert place("spread", state, Demand(6)) == ((0, (0, 1)), (1, (0, 1)), (2, (0,)), (3, (0,)))


def test_spread_prefers_the_most_free_nodes(mixed: ClusterState) -> None:
    # Free 5, 2, 2, 8: node 3 stays the most free while it gives three GPUs (8 -> 5).
    assert place("spread", mixed, Demand(3)) == ((3, (0, 1, 2)),)
    # 10 GPUs: each GPU comes from a most-free node, so every node that gave a GPU is left
    # with at most one free GPU less than the most free node afterwards.
    placement = place("spread", mixed, Demand(10))
    assert placement is not None
    taken = {n: len(g) for n, g in placement}
    left = [mixed.free_whole[n] - taken.get(n, 0) for n in range(4)]
    assert sum(taken.values()) == 10 and sorted(left) == [1, 2, 2, 2]
    assert all(left[n] >= max(left) - 1 for n in taken)
    assert place("spread", mixed, Demand(18)) is None  # only 17 free


# ---- random ----------------------------------------------------------------------------------


def random_choices(seed: int, state: ClusterState, demand: Demand, n: int = 12) -> list[Any]:
    placer = create_placer("random", seed)
    return [placer.place(state, 0, demand) for _ in range(n)]


def test_random_is_deterministic_per_seed_and_differs_across_seeds() -> None:
    state = uniform(16)
    a = random_choices(3, state, Demand(2))
    assert a == random_choices(3, state, Demand(2))
    assert len({p[0][0] for p in a if p}) > 1  # not always the same node
    assert any(random_choices(s, state, Demand(2)) != a for s in (4, 5))
    big = random_choices(7, state, Demand(20))
    assert big == random_choices(7, state, Demand(20))
    assert all(p is not None and sum(len(g) for _, g in p) == 20 for p in big)


def test_random_only_picks_nodes_that_fit(mixed: ClusterState) -> None:
    # 3 GPUs fit on nodes 0 (5 free) and 3 (8 free) only.
    nodes = {p[0][0] for p in random_choices(1, mixed, Demand(3), n=40) if p}
    assert nodes == {0, 3}
    assert place("random", mixed, Demand(9), seed=1) is not None  # 17 free over several nodes
    assert place("random", mixed, Demand(18), seed=1) is None


# ---- every placer: what it returns, allocate accepts --------------------------------------------


def snapshot(state: ClusterState) -> tuple[Any, ...]:
    return (
        [list(f) for f in state.free_milli],
        list(state.free_whole),
        list(state.free_cpus),
        list(state.free_mem),
        list(state.pool_used_milli),
        [dict(p) for p in state.partial_nodes],
        [[state.bucket_nodes(p, k) for k in range(len(b))] for p, b in enumerate(state.buckets)],
    )


@st.composite
def states(draw: st.DrawFn) -> tuple[ClusterState, int]:
    two_pools = draw(st.booleans())
    nodes = []
    for i in range(draw(st.integers(1, 5))):
        nodes.append(
            NodeSpec(
                f"n{i}",
                draw(st.sampled_from([1, 2, 4, 8])),
                gpu_type=draw(st.sampled_from(["k80", "v100"])),
                partition="p1" if two_pools and i % 2 else "p0",
                cpus=draw(st.sampled_from([None, 8.0, 32.0])),
                memory_mib=draw(st.sampled_from([None, 4096.0])),
            )
        )
    state = ClusterState(ClusterSpec("h", tuple(nodes)))
    for _ in range(draw(st.integers(0, 12))):
        node = draw(st.integers(0, len(nodes) - 1))
        k = draw(st.integers(1, nodes[node].gpus))
        gpus = tuple(draw(st.permutations(range(nodes[node].gpus)))[:k])
        milli = draw(st.sampled_from([WHOLE, WHOLE, 250, 500, 700]))
        cpus = draw(st.sampled_from([0.0, 2.0, 6.0]))
        memory = draw(st.sampled_from([0.0, 1024.0]))
        with contextlib.suppress(OverCommitError):  # keep only the allocations that fit
            state.allocate(((node, gpus),), milli, cpus, memory)
    for node in range(len(nodes)):
        empty = state.free_whole[node] == state.node_gpus[node] and all(
            f == WHOLE for f in state.free_milli[node]
        )
        if empty and draw(st.integers(0, 3)) == 0:
            state.set_node_up(node, False)
    return state, draw(st.integers(0, state.num_pools - 1))


@st.composite
def demands(draw: st.DrawFn) -> Demand:
    fraction = draw(st.integers(0, 3)) == 0
    gpus = 1 if fraction else draw(st.integers(0, 20))
    return Demand(
        gpus=gpus,
        milli=draw(st.sampled_from([100, 250, 500, 900])) if fraction else WHOLE,
        cpus=draw(st.sampled_from([0.0, 1.0, 4.0, 12.0])),
        memory_mib=draw(st.sampled_from([0.0, 512.0, 3000.0])),
        gpu_type=draw(st.sampled_from([None, "k80", "V100", "k80|v100", "p100"])),
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(states(), demands(), st.sampled_from(sorted(placers())), st.integers(0, 3))
def test_no_placer_returns_a_placement_allocate_rejects(
    scenario: tuple[ClusterState, int], demand: Demand, name: str, seed: int
) -> None:
    state, pool = scenario
    placer: Placer = create_placer(name, seed)
    before = snapshot(state)
    placement = placer.place(state, pool, demand)
    assert snapshot(state) == before, "a placer changed the state"
    if placement is None:
        return
    assert all(state.node_pool[node] == pool for node, _ in placement)
    assert len({node for node, _ in placement}) == len(placement), "node listed twice"
    if demand.gpus == 0:
        assert len(placement) == 1 and placement[0][1] == ()
    else:
        assert sum(len(g) for _, g in placement) == demand.gpus
        for node, _ in placement:
            assert state.node_matches(node, demand)
    with state.tentative():
        state.allocate(placement, demand.milli, demand.cpus, demand.memory_mib)
    assert snapshot(state) == before


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(states(), demands())
def test_consolidate_finds_a_single_node_whenever_one_fits(
    scenario: tuple[ClusterState, int], demand: Demand
) -> None:
    state, pool = scenario
    if demand.gpus == 0 or demand.milli < WHOLE:
        return
    if demand.gpus > state.pool_max_node_gpus[pool]:
        return
    share_ok = [
        n
        for n in state.pool_nodes[pool]
        if state.node_up[n]
        and state.free_whole[n] >= demand.gpus
        and state.node_matches(n, demand)
        and state.node_fits_extras(n, demand.cpus, demand.memory_mib)
    ]
    placement = place_in(state, pool, demand)
    if not share_ok:
        assert placement is None
        return
    assert placement is not None
    ((node, _),) = placement
    best = min(share_ok, key=lambda n: (state.free_whole[n], n))
    assert node == best


def place_in(state: ClusterState, pool: int, demand: Demand) -> Placement | None:
    return create_placer("consolidate").place(state, pool, demand)
