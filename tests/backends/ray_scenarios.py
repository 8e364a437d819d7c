"""Driver programs for the Ray back-end tests. Each runs inside the test cluster's namespaces
(``python -m tests.backends.ray_scenarios NAME ROOT [INSTANCE]``, with ``RAY_ADDRESS`` set),
drives a real :class:`~dlsched.backends.ray_backend.RayBackend` and prints what it observed as
one JSON line, which the tests check."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ray.util import list_named_actors, placement_group_table

from dlsched.backends.base import KnownRequest, LaunchRequest, Observation, ProcState
from dlsched.backends.ray_backend import RayBackend
from dlsched.cluster.spec import NodeSpec

REPORT = 'echo "node=$DLSCHED_NODE cuda=$CUDA_VISIBLE_DEVICES all=$DLSCHED_GPU_IDS"'
# Checkpoints on SIGTERM and exits 75 (the contract), else runs until `release` appears.
CHECKPOINTING = (
    REPORT + "; trap 'echo saved > \"$DLSCHED_CHECKPOINT_DIR/ckpt\"; exit 75' TERM; "
    "while [ ! -e release ]; do sleep 0.1; done"
)
STUBBORN = REPORT + "; trap '' TERM; while :; do sleep 0.1; done"


def request(rid: str, job: str, script: str, gpu_ids: dict[str, tuple[int, ...]]) -> LaunchRequest:
    return LaunchRequest(rid, job, ("sh", "-c", script), gpu_ids)


def wait_until(
    backend: RayBackend,
    rid: str,
    check: Callable[[Observation], bool],
    timeout: float = 60.0,
) -> Observation:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        o = backend.observe().get(rid)
        if o is not None and check(o):
            return o
        time.sleep(0.1)
    raise AssertionError(f"{rid}: condition not reached; last {backend.observe().get(rid)}")


def running(o: Observation) -> bool:
    return o.state is ProcState.RUNNING


def exited(o: Observation) -> bool:
    return o.state is ProcState.EXITED


def log_of(backend: RayBackend, job: str) -> list[str]:
    path = backend.workdir(job) / "log.txt"
    return path.read_text().splitlines() if path.exists() else []


def summary(o: Observation) -> dict[str, Any]:
    return {"state": str(o.state), "exit_code": o.exit_code, "pid": o.pid}


def placement(backend: RayBackend) -> dict[str, Any]:
    """Jobs on single nodes and across two; idempotent relaunch while running and after exit."""
    reqs = [
        request("a-0", "a", REPORT + "; sleep 1", {"v100-000": (0, 1)}),
        request("b-0", "b", REPORT + "; sleep 1", {"k80-000": (0,)}),
        request("c-0", "c", REPORT + "; sleep 1", {"v100-000": (2,), "k80-000": (1,)}),
    ]
    for r in reqs:
        backend.launch(r)
    wait_until(backend, "a-0", running)
    for r in reqs:
        backend.launch(r)
    finals = {r.request_id: summary(wait_until(backend, r.request_id, exited)) for r in reqs}
    for r in reqs:
        backend.launch(r)
    again = {rid: str(o.state) for rid, o in backend.observe().items()}
    backend.forget("a-0")
    backend.launch(reqs[0])
    after_forget = summary(backend.observe()["a-0"])
    time.sleep(1.0)
    return {
        "finals": finals,
        "again": again,
        "after_forget": after_forget,
        "logs": {job: log_of(backend, job) for job in "abc"},
        "inventory": [(n.name, n.gpus, n.gpu_type) for n in backend.inventory().nodes],
        "errors": [e.kind for e in backend.errors()],
    }


def preemption(backend: RayBackend) -> dict[str, Any]:
    """Graceful preemption (SIGTERM → checkpoint → 75), a forced cancel of a job that ignores
    SIGTERM, and a request planned on a node the cluster does not have."""
    backend.launch(request("p-0", "p", CHECKPOINTING, {"v100-000": (0, 1, 2)}))
    backend.launch(request("s-0", "s", STUBBORN, {"k80-000": (0, 1)}))
    backend.launch(request("x-0", "x", REPORT, {"nowhere": (0,)}))
    wait_until(backend, "p-0", running)
    wait_until(backend, "s-0", running)
    time.sleep(0.5)
    t0 = time.monotonic()
    backend.terminate("p-0", 20.0)
    backend.terminate("s-0", 1.0)
    p = wait_until(backend, "p-0", exited)
    p_s = time.monotonic() - t0
    s = wait_until(backend, "s-0", exited)
    s_s = time.monotonic() - t0
    ckpt = backend.workdir("p") / "checkpoint" / "ckpt"
    # The resumed attempt finds the checkpoint and gets all of v100-000's GPUs back.
    backend.launch(
        request(
            "p-1", "p", REPORT + '; cat "$DLSCHED_CHECKPOINT_DIR/ckpt"', {"v100-000": (0, 1, 2, 3)}
        )
    )
    p1 = wait_until(backend, "p-1", exited)
    return {
        "p": summary(p),
        "p_seconds": p_s,
        "checkpoint": ckpt.read_text().strip() if ckpt.exists() else None,
        "s": summary(s),
        "s_seconds": s_s,
        "x": summary(backend.observe()["x-0"]),
        "p1": summary(p1),
        "errors": [(e.request_id, e.kind, e.message) for e in backend.errors()],
        "logs": {job: log_of(backend, job) for job in "ps"},
    }


def recover_first(backend: RayBackend) -> dict[str, Any]:
    """The first driver: starts a job to keep and one to orphan, then goes away."""
    backend.launch(request("k-0", "k", CHECKPOINTING, {"v100-000": (0,)}))
    backend.launch(request("o-0", "o", CHECKPOINTING, {"k80-000": (0,)}))
    k = wait_until(backend, "k-0", running)
    o = wait_until(backend, "o-0", running)
    backend.close()
    return {"k": summary(k), "o": summary(o)}


def recover_second(backend: RayBackend) -> dict[str, Any]:
    """The restarted driver: adopts k-0, cleans up o-0, and sees k-0 finish."""
    keep = KnownRequest(request("k-0", "k", CHECKPOINTING, {"v100-000": (0,)}))
    backend.recover({"k-0": keep})
    adopted = wait_until(backend, "k-0", running)
    seen = sorted(backend.observe())
    (backend.workdir("k") / "release").touch()
    done = wait_until(backend, "k-0", exited)
    time.sleep(1.0)
    return {
        "adopted": summary(adopted),
        "seen": seen,
        "done": summary(done),
        "actors_after": sorted(list_named_actors()),
        "groups_after": sorted(
            [str(g["name"]), str(g["state"])]
            for g in placement_group_table().values()
            if str(g["name"]).startswith(backend.prefix)
        ),
    }


def alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def node_loss(backend: RayBackend) -> dict[str, Any]:
    """A job on k80-000 and one on v100-000; the test removes k80-000 once both run."""
    backend.launch(request("l-0", "l", CHECKPOINTING, {"k80-000": (0, 1)}))
    backend.launch(request("v-0", "v", CHECKPOINTING, {"v100-000": (0,)}))
    lost = wait_until(backend, "l-0", running)
    wait_until(backend, "v-0", running)
    print("RUNNING", flush=True)
    sys.stdin.readline()
    t0 = time.monotonic()
    gone = wait_until(backend, "l-0", exited, timeout=90)
    detect_s = time.monotonic() - t0
    errors = [(e.request_id, e.kind, e.message) for e in backend.errors()]
    other = backend.observe()["v-0"]
    (backend.workdir("v") / "release").touch()
    v_done = wait_until(backend, "v-0", exited)
    time.sleep(0.5)
    return {
        "lost": summary(gone),
        "detect_s": detect_s,
        "job_alive_after": alive(lost.pid),
        "errors": errors,
        "other_during": summary(other),
        "other_done": summary(v_done),
        "nodes_after": sorted(backend.node_names()),
    }


def local(backend: RayBackend) -> dict[str, Any]:
    """A Ray instance the back end started itself (no address): nodes a (2 GPUs), b (1 GPU)."""
    reqs = [
        request("a-0", "a", REPORT + "; sleep 1", {"a": (0, 1)}),
        request("b-0", "b", REPORT + "; sleep 1", {"b": (0,)}),
    ]
    for r in reqs:
        backend.launch(r)
    finals = {r.request_id: summary(wait_until(backend, r.request_id, exited)) for r in reqs}
    return {
        "started_local": backend.started_local,
        "finals": finals,
        "logs": {job: log_of(backend, job) for job in "ab"},
        "errors": [e.kind for e in backend.errors()],
    }


def environment(backend: RayBackend) -> dict[str, Any]:
    """A job's environment: the names it got, and whether the Ray worker's others leaked."""
    backend.launch(request("e-0", "e", "env > env.txt", {"v100-000": (0,)}))
    wait_until(backend, "e-0", exited)
    text = (backend.workdir("e") / "env.txt").read_text()
    return {
        "names": sorted(x.split("=", 1)[0] for x in text.splitlines() if "=" in x),
        "home": next((x[5:] for x in text.splitlines() if x.startswith("HOME=")), None),
        "workdir": str(backend.workdir("e")),
    }


SCENARIOS: dict[str, Callable[[RayBackend], dict[str, Any]]] = {
    "environment": environment,
    "placement": placement,
    "preemption": preemption,
    "recover_first": recover_first,
    "recover_second": recover_second,
    "node_loss": node_loss,
    "local": local,
}
LOCAL_NODES = (NodeSpec("a", 2, "v100"), NodeSpec("b", 1, "k80"))


def main(argv: list[str]) -> None:
    name, root = argv[0], Path(argv[1])
    instance = argv[2] if len(argv) > 2 else name
    if name == "local":
        backend = RayBackend(root, instance, address=None, local_nodes=LOCAL_NODES)
    else:
        backend = RayBackend(root, instance)
    try:
        result = SCENARIOS[name](backend)
    finally:
        if name != "recover_first":
            backend.kill_all()
            backend.close()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
