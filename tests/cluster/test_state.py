"""ClusterState: allocation bookkeeping, its safety contracts, health and admission reasons."""

from __future__ import annotations

from typing import Any

import pytest

from dlsched.cluster.spec import ClusterSpec, NodeSpec
from dlsched.cluster.state import WHOLE, ClusterState, Demand, OverCommitError
from dlsched.placement.registry import create_placer
from dlsched.policy.registry import create_policy
from dlsched.scheduler.cycle import Scheduler


def cluster(*nodes: NodeSpec) -> ClusterState:
    return ClusterState(ClusterSpec("s", nodes))


def snapshot(state: ClusterState) -> tuple[Any, ...]:
    """Everything allocation and health change, in comparable form."""
    return (
        [list(f) for f in state.free_milli],
        list(state.free_whole),
        list(state.free_cpus),
        list(state.free_mem),
        list(state.pool_used_milli),
        list(state.pool_up_gpus),
        list(state.node_up),
        [dict(p) for p in state.partial_nodes],
        [[state.bucket_nodes(p, k) for k in range(len(b))] for p, b in enumerate(state.buckets)],
        [[state.first_in_bucket(p, k) for k in range(len(b))] for p, b in enumerate(state.buckets)],
    )


@pytest.fixture
def state() -> ClusterState:
    """Two 4-GPU nodes with 16 CPUs and 64 GiB each, in one partition."""
    return cluster(
        NodeSpec("n0", 4, cpus=16.0, memory_mib=65536.0),
        NodeSpec("n1", 4, cpus=16.0, memory_mib=65536.0),
    )


def test_initial_state(state: ClusterState) -> None:
    assert state.pool_names == ("default",) and state.num_pools == 1
    assert state.total_gpus == 8 and state.pool_free_gpus(0) == 8
    assert state.free_whole == [4, 4]
    assert state.bucket_nodes(0, 4) == [0, 1] and state.first_in_bucket(0, 4) == 0
    assert state.first_in_bucket(0, 2) == -1
    assert state.busy_gpus(0) == 0


def test_allocate_and_release_round_trip(state: ClusterState) -> None:
    before = snapshot(state)
    placement = ((0, (1, 3)), (1, (0, 1, 2, 3)))
    state.allocate(placement, WHOLE, 12.0, 3000.0)
    assert state.free_milli[0] == [WHOLE, 0, WHOLE, 0] and state.free_milli[1] == [0] * 4
    assert state.free_whole == [2, 0]
    # CPUs and memory split by GPUs per node: 2 of 6 GPUs on n0, 4 of 6 on n1.
    assert state.free_cpus == pytest.approx([12.0, 8.0])
    assert state.free_mem == pytest.approx([64536.0, 63536.0])
    assert state.pool_free_gpus(0) == 2 and state.busy_gpus(0) == 6
    assert state.bucket_nodes(0, 2) == [0] and state.bucket_nodes(0, 0) == [1]
    assert state.bucket_nodes(0, 4) == []
    state.release(placement, WHOLE, 12.0, 3000.0)
    assert snapshot(state) == before


def test_fractional_shares_round_trip(state: ClusterState) -> None:
    before = snapshot(state)
    state.allocate(((0, (2,)),), 250, 1.0, 0.0)
    state.allocate(((0, (2,)),), 500, 1.0, 0.0)
    assert state.free_milli[0][2] == 250
    assert state.free_whole[0] == 3 and 0 in state.partial_nodes[0]
    assert state.pool_free_gpus(0) == pytest.approx(7.25)
    assert state.busy_gpus(0) == pytest.approx(0.75)
    with pytest.raises(OverCommitError, match="has 250 free, 300 asked"):
        state.allocate(((0, (2,)),), 300, 0.0, 0.0)
    state.release(((0, (2,)),), 500, 1.0, 0.0)
    state.release(((0, (2,)),), 250, 1.0, 0.0)
    assert 0 not in state.partial_nodes[0]
    assert snapshot(state) == before


def test_double_allocation_raises_and_changes_nothing(state: ClusterState) -> None:
    state.allocate(((1, (2,)),), WHOLE, 0.0, 0.0)
    before = snapshot(state)
    # The first node of the placement is free; the second is not. Nothing may be taken.
    with pytest.raises(OverCommitError, match="GPU 2 of node n1 has 0 free"):
        state.allocate(((0, (0, 1)), (1, (2,))), WHOLE, 0.0, 0.0)
    assert snapshot(state) == before
    with pytest.raises(OverCommitError, match="listed twice"):
        state.allocate(((0, (0, 0)),), WHOLE, 0.0, 0.0)
    assert snapshot(state) == before


def test_allocation_beyond_free_cpus_or_memory_raises_and_changes_nothing(
    state: ClusterState,
) -> None:
    state.allocate(((0, (0,)),), WHOLE, 10.0, 0.0)
    before = snapshot(state)
    with pytest.raises(OverCommitError, match="lacks CPUs or memory"):
        state.allocate(((1, (0,)), (0, (1,))), WHOLE, 14.0, 0.0)  # 7 CPUs on n0, 6 left
    assert snapshot(state) == before
    with pytest.raises(OverCommitError, match="lacks CPUs or memory"):
        state.allocate(((1, (0,)),), WHOLE, 0.0, 70000.0)
    assert snapshot(state) == before


def test_tentative_restores_exact_state_including_releases(state: ClusterState) -> None:
    outside = ((0, (0, 1)),)
    state.allocate(outside, WHOLE, 4.0, 100.0)
    state.allocate(((1, (3,)),), 400, 1.0, 0.0)
    before = snapshot(state)
    with state.tentative():
        state.release(outside, WHOLE, 4.0, 100.0)  # made before the block
        state.allocate(((0, (0, 1, 2)),), WHOLE, 8.0, 0.0)
        state.allocate(((1, (3,)),), 600, 1.0, 0.0)
        state.allocate(((1, (0, 1)),), WHOLE, 2.0, 0.0)
        state.release(((1, (0, 1)),), WHOLE, 2.0, 0.0)  # made inside the block
        assert state.free_whole == [1, 3] and state.free_milli[1][3] == 0
    assert snapshot(state) == before


def test_tentative_restores_state_on_error_and_does_not_nest(state: ClusterState) -> None:
    before = snapshot(state)
    with pytest.raises(OverCommitError), state.tentative():
        state.allocate(((0, (0,)),), WHOLE, 0.0, 0.0)
        state.allocate(((0, (0,)),), WHOLE, 0.0, 0.0)
    assert snapshot(state) == before
    with pytest.raises(RuntimeError, match="do not nest"), state.tentative(), state.tentative():
        pass
    assert snapshot(state) == before
    # After a refused nesting the outer block still ended: a new block may start.
    with state.tentative():
        state.allocate(((1, (0,)),), WHOLE, 0.0, 0.0)
    assert snapshot(state) == before


def test_node_failure_and_repair_bookkeeping(state: ClusterState) -> None:
    state.set_node_up(0, False)
    assert state.node_up == [False, True]
    assert state.pool_up_gpus == [4] and state.pool_free_gpus(0) == 4
    assert state.pool_total_gpus == [8]
    assert state.bucket_nodes(0, 4) == [1] and state.first_in_bucket(0, 4) == 1
    with pytest.raises(OverCommitError, match="node n0 is down"):
        state.allocate(((0, (0,)),), WHOLE, 0.0, 0.0)
    state.set_node_up(0, False)  # failing a failed node changes nothing
    assert state.pool_up_gpus == [4]
    state.set_node_up(0, True)
    assert state.node_up == [True, True] and state.pool_up_gpus == [8]
    assert state.bucket_nodes(0, 4) == [0, 1] and state.first_in_bucket(0, 4) == 0
    state.set_node_up(0, True)
    assert state.pool_up_gpus == [8]


def test_a_node_holding_jobs_cannot_fail(state: ClusterState) -> None:
    state.allocate(((1, (0,)),), 100, 0.0, 0.0)  # a share, not a whole GPU
    with pytest.raises(OverCommitError, match="failed while holding jobs"):
        state.set_node_up(1, False)
    assert state.node_up == [True, True]


def test_down_node_with_changed_free_count_reappears_in_the_right_bucket() -> None:
    s = cluster(NodeSpec("n0", 4), NodeSpec("n1", 4))
    s.allocate(((0, (0, 1)),), WHOLE, 0.0, 0.0)
    s.release(((0, (0, 1)),), WHOLE, 0.0, 0.0)
    s.set_node_up(0, False)
    s.set_node_up(0, True)
    for k in range(5):
        assert s.bucket_nodes(0, k) == ([0, 1] if k == 4 else [])
    assert s.first_in_bucket(0, 2) == -1 and s.first_in_bucket(0, 4) == 0


def test_pool_free_gpus_per_partition() -> None:
    spec = ClusterSpec(
        "p",
        (
            NodeSpec("a0", 4, partition="a"),
            NodeSpec("b0", 8, partition="b"),
            NodeSpec("a1", 2, partition="a"),
        ),
    )
    s = ClusterState(spec)
    assert s.pool_names == ("a", "b") and s.node_pool == [0, 1, 0]
    assert s.pool_nodes == [[0, 2], [1]] and s.pool_max_node_gpus == [4, 8]
    s.allocate(((2, (0,)),), 500, 0.0, 0.0)
    s.allocate(((0, (0, 1, 2)),), WHOLE, 0.0, 0.0)
    assert s.pool_free_gpus(0) == pytest.approx(6 - 3.5)
    assert s.pool_free_gpus(1) == 8
    s.set_node_up(1, False)
    assert s.pool_free_gpus(1) == 0
    pooled = ClusterState(spec, use_partitions=False)
    assert pooled.pool_names == ("*",) and pooled.pool_free_gpus(0) == 14
    assert pooled.pool_nodes == [[0, 1, 2]]


def test_can_ever_fit_reasons() -> None:
    spec = ClusterSpec(
        "r",
        (
            NodeSpec("v0", 4, gpu_type="v100", partition="a", cpus=16.0, memory_mib=1000.0),
            NodeSpec("k0", 8, gpu_type="k80", partition="a", cpus=32.0, memory_mib=1000.0),
            NodeSpec("c0", 0, partition="b", cpus=4.0),
        ),
    )
    s = ClusterState(spec)
    assert s.can_ever_fit(0, Demand(12)) is None
    assert s.can_ever_fit(0, Demand(4, gpu_type="V100", cpus=16.0)) is None
    assert s.can_ever_fit(0, Demand(13)) == "needs 13 GPUs but pool 'a' has 12"
    assert s.can_ever_fit(0, Demand(5, gpu_type="v100")) == "needs 5 GPUs but pool 'a' has 4"
    assert s.can_ever_fit(0, Demand(1, gpu_type="p100")) == (
        "no node of GPU type 'p100' in pool 'a'"
    )
    assert s.can_ever_fit(0, Demand(2, cpus=40.0)) == (
        "needs 40 CPUs and 0 MiB on one node; no node in pool 'a' has that much"
    )
    # 2 v100 GPUs with 20 CPUs: only the v100 node counts, and it has 16.
    assert s.can_ever_fit(0, Demand(2, gpu_type="v100", cpus=20.0)) is not None
    assert s.can_ever_fit(0, Demand(1, memory_mib=2000.0)) is not None
    # A GPU job in a partition without GPUs; a CPU-only job there.
    assert s.can_ever_fit(1, Demand(1)) == "needs 1 GPUs but pool 'b' has 0"
    assert s.can_ever_fit(1, Demand(0, cpus=4.0)) is None
    assert s.can_ever_fit(1, Demand(0, cpus=5.0)) is not None
    # Health does not matter: "ever" means on a healthy, empty cluster.
    s.set_node_up(0, False)
    s.allocate(((1, (0, 1, 2, 3, 4, 5, 6, 7)),), WHOLE, 32.0, 1000.0)
    assert s.can_ever_fit(0, Demand(12)) is None


@pytest.mark.parametrize(
    ("nodes", "demand"),
    [
        # Two 4-GPU nodes with 8 CPUs each: an 8-GPU job asking 100 CPUs can never run.
        ((NodeSpec("n0", 4, cpus=8.0), NodeSpec("n1", 4, cpus=8.0)), Demand(8, cpus=100.0)),
        # n0 has the GPUs but not the CPUs, n1 the CPUs but not the GPUs; the job is not larger
        # than the largest node, so consolidate only ever puts it on one node.
        ((NodeSpec("n0", 8, cpus=4.0), NodeSpec("n1", 2, cpus=64.0)), Demand(4, cpus=32.0)),
        # GPU types: 6 v100 GPUs, but the v100 nodes have 4 between them.
        (
            (
                NodeSpec("v0", 2, gpu_type="v100"),
                NodeSpec("k0", 8, gpu_type="k80"),
                NodeSpec("v1", 2, gpu_type="v100"),
            ),
            Demand(6, gpu_type="v100"),
        ),
    ],
)
def test_admission_rejects_jobs_that_can_never_be_placed(
    nodes: tuple[NodeSpec, ...], demand: Demand
) -> None:
    scheduler = Scheduler(create_policy("fifo"), create_placer("consolidate"), cluster(*nodes))
    assert scheduler.never_fits(0, demand) is not None


def test_admission_accepts_a_typed_job_spanning_nodes_of_its_type() -> None:
    # 4 v100 GPUs over two 2-GPU v100 nodes: larger than any v100 node, so it spans nodes,
    # even though a k80 node has 8 GPUs.
    nodes = (
        NodeSpec("v0", 2, gpu_type="v100"),
        NodeSpec("k0", 8, gpu_type="k80"),
        NodeSpec("v1", 2, gpu_type="v100"),
    )
    scheduler = Scheduler(create_policy("fifo"), create_placer("consolidate"), cluster(*nodes))
    assert scheduler.never_fits(0, Demand(4, gpu_type="v100")) is None
