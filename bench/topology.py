"""Topology-aware placement against consolidate on a racked, blocked cluster.

Replays the bundled Philly jobs of 2017-10-01..11-30 (68,510 jobs, 186 of them larger than
one 8-GPU node) under FIFO on ``philly-vcs`` (each job in its VC's nodes, as Helios replays
it). The nodes are laid out in cluster order in racks of 4 nodes, 4 racks to a block (an
assumed layout: Philly's racks are not published), and the tier comm model is on in every run
(``--comm-model tiers``: assumed factors, see ``docs/topology.md``). Arrivals can be
compressed (``--submit-scale``) to raise the load. Prints, per placement, the rigid starts by
tier, the share of multi-node starts that span racks, average JCT (all jobs and multi-node
jobs) and queueing, the fragmented jobs and the run's wall time.

    python bench/topology.py [--submit-scale 0.5]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import pyarrow.compute as pc

from dlsched.cluster.parse import resolve_cluster
from dlsched.cluster.spec import ClusterSpec
from dlsched.runner import Selection
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import simulate
from dlsched.trace.bundled import bundled_trace_path
from dlsched.trace.read import read_trace

NODES_PER_RACK, RACKS_PER_BLOCK = 4, 4

RUNS = {
    "consolidate": SimConfig(placement="consolidate"),
    "topology": SimConfig(placement="topology"),
    "topology required=block": SimConfig(
        placement="topology", placement_options={"required": "block"}
    ),
}


def cluster() -> ClusterSpec:
    """The machines of ``philly-vcs`` in racks and blocks, node order kept."""
    philly = resolve_cluster("philly-vcs")
    nodes = tuple(
        replace(
            n,
            rack=f"r{i // NODES_PER_RACK}",
            block=f"b{i // (NODES_PER_RACK * RACKS_PER_BLOCK)}",
        )
        for i, n in enumerate(philly.nodes)
    )
    return ClusterSpec("philly-racked", nodes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--submit-scale", type=float, default=1.0)
    args = ap.parse_args()
    trace = read_trace(bundled_trace_path("philly_2017-10-01_2017-12-01")).trace
    trace = Selection(submit_scale=args.submit_scale).apply(trace, 0)
    spec = cluster()
    racks = len({n.rack for n in spec.nodes})
    blocks = len({n.block for n in spec.nodes})
    print(
        f"{len(trace)} jobs, submit scale {args.submit_scale}, {len(spec.nodes)} nodes "
        f"({spec.total_gpus} GPUs) in {racks} racks of {NODES_PER_RACK}, {blocks} blocks"
    )
    print(
        "| placement | starts node/rack/block/cluster | multi-node spanning racks | "
        "avg JCT (s) | multi-node avg JCT (s) | avg queue (s) | fragmented jobs | wall (s) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    base_jct = None
    for name, cfg in RUNS.items():
        config = SimConfig(
            placement=cfg.placement,
            placement_options=cfg.placement_options,
            comm_model="tiers",
        )
        started = time.perf_counter()
        result = simulate(trace, spec, config)
        wall = time.perf_counter() - started
        s = result.summary
        jobs = result.jobs.filter(
            pc.and_(pc.equal(result.jobs["status"], "finished"), pc.greater(result.jobs["gpus"], 8))
        )
        multi_jct = pc.mean(jobs["jct_s"]).as_py()
        tiers = s["starts_by_tier"]
        multi = tiers["rack"] + tiers["block"] + tiers["cluster"]
        spanning = tiers["block"] + tiers["cluster"]
        share = f"{spanning}/{multi} = {spanning / multi:.1%}" if multi else "no multi-node"
        base_jct = base_jct or s["avg_jct_s"]
        print(
            f"| {name} | {tiers['node']}/{tiers['rack']}/{tiers['block']}/{tiers['cluster']} "
            f"| {share} | {s['avg_jct_s']:,.0f} ({s['avg_jct_s'] / base_jct:.3f}x) "
            f"| {multi_jct:,.0f} "
            f"| {s['avg_queue_s']:,.0f} | {s['fragmented_jobs']} | {wall:.1f} |"
        )


if __name__ == "__main__":
    main()
