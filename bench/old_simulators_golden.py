"""Recompute figures of ``tests/data/golden/old_simulators.json`` with the old simulators.

The old elastic simulator (``dlsched.elastic.run.run_elastic``) was deleted by commit 44eca3f;
its figures were recorded at commit 791c7ba. When a module both simulators share changes on
purpose (a performance model's fit, say), the reference must be made again with the same module,
or the golden test compares two different models. This script does that:

1. checks out commit 791c7ba of this repository into a temporary work tree;
2. copies over it the current versions of the shared modules named by ``--overlay`` (by default
   the numerics package and the two fits that moved to it: ``perf/optimus.py`` and
   ``perf/pollux_fit.py``, unchanged since 791c7ba but for that);
3. runs every elastic reference run of the chosen policies with the old simulator in a
   subprocess that imports that tree;
4. prints, per run, the old and new figures, and with ``--write`` stores the new ones in the
   golden file, noting the overlay in its header.

    python bench/old_simulators_golden.py --policies optimus [--traces DIR] [--write]

Needs git and the shared traces (``--traces``, default ``../shared/traces`` beside the project)
for the Pollux workloads other than the bundled workload-6.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "data" / "golden" / "old_simulators.json"
OLD_COMMIT = "791c7ba"
OVERLAY = (
    "src/dlsched/numerics",
    "src/dlsched/perf/optimus.py",
    "src/dlsched/perf/pollux_fit.py",
)

_INSIDE = """
import json, sys
from pathlib import Path
from dlsched.cluster.parse import resolve_cluster
from dlsched.elastic.run import run_elastic
from dlsched.trace.bundled import bundled_trace_path
from dlsched.trace.read import read_trace

traces, cluster, figures = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
for line in sys.stdin:
    run = json.loads(line)
    if (run["load"], run["workload"]) == ("workloads", 6):
        path = bundled_trace_path("pollux_workload-6")
    else:
        path = traces / "pollux-workloads" / run["load"] / f"workload-{run['workload']}.csv"
    trace = read_trace(path).trace
    out = run_elastic(trace, resolve_cluster(cluster), run["policy"], run["options"],
                      seed=run["seed"])
    summary = out.summary
    print(json.dumps({f: summary[f] for f in ["jobs", *figures]}), flush=True)
"""


def old_tree(where: Path, overlay: tuple[str, ...]) -> Path:
    """A work tree of :data:`OLD_COMMIT` with ``overlay`` copied from this checkout."""
    tree = where / "old"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), OLD_COMMIT],
        check=True,
        capture_output=True,
    )
    for part in overlay:
        source, target = ROOT / part, tree / part
        if source.is_dir():
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target)
    return tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", default="optimus", help="comma-separated elastic policies")
    parser.add_argument("--traces", type=Path, default=ROOT.parent / "shared" / "traces")
    parser.add_argument("--overlay", default=",".join(OVERLAY), help="paths copied over 791c7ba")
    parser.add_argument("--write", action="store_true", help="store the figures in the golden")
    parser.add_argument("--why", default="", help="the reason, kept in the golden's header")
    args = parser.parse_args()
    golden: dict[str, Any] = json.loads(GOLDEN.read_text())
    policies = set(args.policies.split(","))
    runs = [r for r in golden["elastic"]["runs"] if r["policy"] in policies]
    overlay = tuple(p for p in args.overlay.split(",") if p)
    figures = golden["elastic"]["figures"]
    with tempfile.TemporaryDirectory() as tmp:
        tree = old_tree(Path(tmp), overlay)
        try:
            env = {**os.environ, "PYTHONPATH": str(tree / "src")}
            request = "".join(json.dumps(r) + "\n" for r in runs)
            done = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    _INSIDE,
                    str(args.traces),
                    golden["elastic"]["cluster"],
                    json.dumps(figures),
                ],
                input=request,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False
            )
    for run, line in zip(runs, done.stdout.splitlines(), strict=True):
        new = json.loads(line)
        label = f"{run['load']} w{run['workload']} {run['policy']} {run['options']}"
        changes = {f: (run[f], new[f]) for f in figures if run[f] != new[f]}
        print(label, changes if changes else "unchanged")
        if new["jobs"] != run["jobs"]:
            raise SystemExit(f"{label}: {new['jobs']} jobs, the reference has {run['jobs']}")
        run.update({f: new[f] for f in figures})
    if args.write:
        note = (
            f"elastic {', '.join(sorted(policies))}: recomputed by bench/old_simulators_golden.py "
            f"at {OLD_COMMIT} with {', '.join(overlay)} of the current tree"
            + (f": {args.why}" if args.why else "")
        )
        # One note per recomputation: a later one of the same policies replaces it.
        notes = golden["header"].setdefault("recomputed", [])
        notes[:] = [n for n in notes if not n.startswith(note.split(":")[0])] + [note]
        GOLDEN.write_text(json.dumps(golden, indent=1) + "\n")


if __name__ == "__main__":
    main()
