"""The topology placer: smallest tier first, required levels never spanned, options refused."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.cluster.spec import ClusterSpec, NodeSpec
from dlsched.cluster.state import WHOLE, ClusterState, Demand, OverCommitError
from dlsched.cluster.topology import BLOCK, CLUSTER, NODE, RACK, domain, placement_tier
from dlsched.placement.registry import create_placer


def racked(shape: list[list[list[int]]]) -> ClusterState:
    """Blocks of racks of nodes, each node given by its GPU count; nodes in block order."""
    nodes = [
        NodeSpec(f"n{b}-{r}-{i}", gpus, rack=f"r{b}-{r}", block=f"b{b}")
        for b, racks in enumerate(shape)
        for r, rack in enumerate(racks)
        for i, gpus in enumerate(rack)
    ]
    return ClusterState(ClusterSpec("t", tuple(nodes)))


def use(state: ClusterState, node: int, gpus: int) -> None:
    free = [g for g, f in enumerate(state.free_milli[node]) if f == WHOLE][:gpus]
    state.allocate(((node, tuple(free)),), WHOLE, 0.0, 0.0)


def test_multi_node_job_stays_in_one_rack_where_consolidate_spans() -> None:
    # Two racks of two 4-GPU nodes; node 0 and node 3 have one GPU busy.
    state = racked([[[4, 4], [4, 4]]])
    use(state, 0, 1)
    use(state, 2, 4)
    # Rack r0-0 has 3 + 4 = 7 free, rack r0-1 has 0 + 4 = 4 free: 6 GPUs fit only rack r0-0.
    placement = create_placer("topology").place(state, 0, Demand(6))
    assert placement is not None
    assert {n for n, _ in placement} == {0, 1}
    assert placement_tier(state, placement) == RACK


def test_best_fit_domain_is_the_fullest_that_holds_the_job() -> None:
    state = racked([[[4, 4], [4, 4]]])
    use(state, 1, 1)
    # Both racks hold 6 GPUs; rack r0-0 has 7 free, r0-1 has 8: best fit is r0-0.
    placement = create_placer("topology").place(state, 0, Demand(6))
    assert placement is not None
    assert {n for n, _ in placement} == {0, 1}


def test_required_rack_waits_where_preferred_spans_racks() -> None:
    state = racked([[[4, 4], [4, 4]]])
    for node in range(4):
        use(state, node, 2)
    # 4 free GPUs in each rack, 8 in all.
    assert (
        create_placer("topology", options={"required": "rack"}).place(state, 0, Demand(6)) is None
    )
    spanning = create_placer("topology", options={"preferred": "rack"}).place(state, 0, Demand(6))
    assert spanning is not None
    assert placement_tier(state, spanning) == BLOCK


def test_required_block_spans_racks_but_not_blocks() -> None:
    state = racked([[[4], [4]], [[4], [4]]])
    required = create_placer("topology", options={"required": "block"})
    placement = required.place(state, 0, Demand(8))
    assert placement is not None and placement_tier(state, placement) == BLOCK
    assert required.place(state, 0, Demand(12)) is None
    anywhere = create_placer("topology").place(state, 0, Demand(12))
    assert anywhere is not None and placement_tier(state, anywhere) == CLUSTER


def test_single_node_jobs_are_placed_as_consolidate_places_them() -> None:
    state = racked([[[8, 8], [8]]])
    use(state, 0, 3)
    use(state, 1, 4)
    use(state, 2, 6)
    # 6 GPUs are free in rack r0-0 but on no one node: the job waits rather than spread.
    for gpus in (1, 2, 3, 5, 6, 8):
        demand = Demand(gpus)
        assert create_placer("topology").place(state, 0, demand) == create_placer(
            "consolidate"
        ).place(state, 0, demand)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"level": "rack"},
            "--placement-opt level: placement 'topology' takes required, preferred",
        ),
        ({"required": "rack", "preferred": "block"}, "either required=LEVEL or preferred=LEVEL"),
        ({"required": "row"}, "--placement-opt required: expected one of node, rack, block"),
    ],
)
def test_bad_options_are_refused_naming_them(options: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        create_placer("topology", options=options)


def test_other_placers_refuse_options() -> None:
    with pytest.raises(ValueError, match="placement 'consolidate' takes no options"):
        create_placer("consolidate", options={"required": "rack"})


# ---- properties ---------------------------------------------------------------------------------


@st.composite
def topologies(draw: st.DrawFn) -> ClusterState:
    shape = draw(
        st.lists(
            st.lists(
                st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=3),
                max_size=3,
                min_size=1,
            ),
            min_size=1,
            max_size=3,
        )
    )
    state = racked(shape)
    for _ in range(draw(st.integers(0, 10))):
        node = draw(st.integers(0, len(state.node_gpus) - 1))
        k = draw(st.integers(1, state.node_gpus[node]))
        with contextlib.suppress(OverCommitError):
            use(state, node, k) if state.free_whole[node] >= k else None
    for node in range(len(state.node_gpus)):
        if state.node_idle(node) and draw(st.integers(0, 4)) == 0:
            state.set_node_up(node, False)
    return state


def smallest_fitting_tier(state: ClusterState, gpus: int) -> int | None:
    """The smallest tier with one domain of up nodes holding ``gpus`` free GPUs, or None; a
    job that fits one node of the cluster only ever runs on one node."""
    if gpus <= state.pool_max_node_gpus[0]:
        fits = any(up and f >= gpus for up, f in zip(state.node_up, state.free_whole, strict=True))
        return NODE if fits else None
    for tier in (NODE, RACK, BLOCK, CLUSTER):
        free: dict[str | int, int] = {}
        for node in range(len(state.node_gpus)):
            if state.node_up[node]:
                key = domain(state, node, tier)
                free[key] = free.get(key, 0) + state.free_whole[node]
        if any(f >= gpus for f in free.values()):
            return tier
    return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(topologies(), st.integers(1, 40))
def test_never_spans_a_tier_when_a_smaller_one_fits(state: ClusterState, gpus: int) -> None:
    placement = create_placer("topology").place(state, 0, Demand(gpus))
    tier = smallest_fitting_tier(state, gpus)
    if tier is None:
        assert placement is None
        return
    assert placement is not None
    assert sum(len(g) for _, g in placement) == gpus
    assert placement_tier(state, placement) == tier


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(topologies(), st.integers(1, 40), st.sampled_from(["node", "rack", "block"]))
def test_required_never_spans_beyond_its_level(state: ClusterState, gpus: int, level: str) -> None:
    placement = create_placer("topology", options={"required": level}).place(state, 0, Demand(gpus))
    limit = ("node", "rack", "block").index(level)
    tier = smallest_fitting_tier(state, gpus)
    if tier is None or tier > limit:
        assert placement is None
        return
    assert placement is not None
    assert placement_tier(state, placement) == tier <= limit
