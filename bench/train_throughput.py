"""Throughput of the training workload alone: one job at a time, per GPU count and threads.

Runs ``python -m dlsched.workloads.train`` (no service) for each configuration and prints the
samples/s each job measured after warm-up (its status file), plus the wall time of the whole
process (start-up included). On CPU the GPU count only multiplies the global batch.

Usage: ``.venv/bin/python bench/train_throughput.py [--model resnet-small] [--samples 2048]``.
Needs the ``train`` extra.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dlsched.workloads.status import read_status


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="resnet-small")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--samples", type=int, default=2048, help="samples per job")
    p.add_argument("--gpus", default="1,2,4")
    p.add_argument("--threads", default="1", help="comma-separated thread counts, e.g. 1,2")
    args = p.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DLSCHED_")}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    print(f"{args.model}, per-GPU batch {args.batch_size}, {args.samples} samples per job")
    print(f"{'gpus':>4} {'threads':>7} {'global batch':>12} {'samples/s':>10} {'wall (s)':>9}")
    with tempfile.TemporaryDirectory(prefix="dlsched-train-bench-") as tmp:
        for threads in (int(t) for t in args.threads.split(",")):
            for gpus in (int(g) for g in args.gpus.split(",")):
                workdir = Path(tmp) / f"g{gpus}-t{threads}"
                cmd = [sys.executable, "-m", "dlsched.workloads.train", "--model", args.model]
                cmd += ["--epochs", "1", "--epoch-samples", str(args.samples)]
                cmd += ["--batch-size", str(args.batch_size), "--gpus", str(gpus)]
                cmd += ["--threads", str(threads), "--checkpoint-every", "0"]
                cmd += ["--workdir", str(workdir)]
                began = time.perf_counter()
                done = subprocess.run(cmd, env=env, capture_output=True, text=True)
                wall = time.perf_counter() - began
                if done.returncode != 0:
                    print(done.stderr, file=sys.stderr)
                    return 1
                s = read_status(workdir / "status.json")
                print(
                    f"{gpus:4d} {threads:7d} {s.global_batch_size:12d} "
                    f"{s.samples_per_s:10.1f} {wall:9.1f}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
