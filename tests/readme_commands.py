"""The command blocks of README.md, and how a user runs them: from the root of a fresh checkout
with the public traces beside it (``../shared``), the ``dlsched`` script and ``python`` of this
environment on ``PATH``.

Also runnable as a script (``python tests/readme_commands.py SPEC.json``): runs one session of
commands that may start a long-running ``dlsched serve`` in the background and talk to it
(possibly on a throwaway Slurm cluster), and writes what happened to ``SPEC.json``'s ``result``
file. The README test runs it inside its own network namespace, so the README's default port
8765 is free whatever else runs on the machine.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
SHARED = REPO.parent / "shared"
COMMAND_PREFIXES = ("dlsched ", "make ", "python ")
SERVE_PREFIX = "dlsched serve"
FINAL_STATES = {"COMPLETED", "FAILED", "CANCELLED"}


@dataclass(frozen=True)
class Block:
    """One fenced block of commands, under the innermost heading it appears in."""

    heading: str
    line: int
    commands: tuple[str, ...]


def _logical_lines(lines: list[str]) -> Iterator[str]:
    """Lines with backslash continuations joined and ``  # comments`` dropped."""
    pending = ""
    for raw in lines:
        line = raw.rstrip()
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        line = pending + line.strip()
        pending = ""
        line = re.split(r"\s+#\s", line, maxsplit=1)[0].strip()
        if line and not line.startswith("#"):
            yield re.sub(r"\s+", " ", line)


def readme_blocks(text: str) -> list[Block]:
    """Every fenced block of ``text`` whose lines are commands (the layout tree is not)."""
    blocks: list[Block] = []
    heading = ""
    fence: list[str] | None = None
    start = 0
    for number, line in enumerate(text.splitlines(), 1):
        if fence is not None:
            if line.startswith("```"):
                commands = tuple(_logical_lines(fence))
                if commands and all(c.startswith(COMMAND_PREFIXES) for c in commands):
                    blocks.append(Block(heading, start, commands))
                elif any(c.startswith(COMMAND_PREFIXES) for c in commands):
                    raise ValueError(f"README.md:{start}: a block mixes commands and other text")
                fence = None
            else:
                fence.append(line)
        elif line.startswith("```"):
            fence, start = [], number
        elif line.startswith("#"):
            heading = line.lstrip("#").strip()
    return blocks


def inline_commands(text: str) -> list[str]:
    """Commands written inline in the prose (``dlsched ...`` code spans)."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    return [m for m in re.findall(r"`([^`\n]+)`", prose) if m.startswith(COMMAND_PREFIXES)]


def is_syntax(command: str) -> bool:
    """Whether an inline command shows syntax rather than an example: it has a placeholder
    (an upper-case word such as TRACE or JOB), optional parts in brackets, or an ellipsis."""
    return bool(re.search(r"\b[A-Z][A-Z_=]*\b|\[|\.\.\.|…", command))


def user_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This environment as a user's shell: its ``dlsched`` and ``python`` first on ``PATH``,
    no DLSCHED_* settings of the caller."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DLSCHED_")}
    env.update(extra or {})
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def make_checkout(root: Path) -> Path:
    """``root/checkout`` (empty, the working directory) with ``root/shared`` beside it."""
    checkout = root / "checkout"
    checkout.mkdir()
    if SHARED.is_dir():
        (root / "shared").symlink_to(SHARED)
    return checkout


def run_command(command: str, cwd: Path, env: dict[str, str], timeout: float) -> dict[str, Any]:
    """Run ``command`` as a shell would; its exit code and output."""
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    return {"command": command, "rc": done.returncode, "out": done.stdout, "err": done.stderr}


# ---- sessions with a running service (the script part) -------------------------------------


def _jobs(cwd: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    done = run_command("dlsched jobs --json", cwd, env, 60)
    if done["rc"] != 0:
        raise RuntimeError(f"dlsched jobs failed: {done['err']}")
    jobs: list[dict[str, Any]] = json.loads(done["out"])
    return jobs


def _wait_final(cwd: Path, env: dict[str, str], timeout: float) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        jobs = _jobs(cwd, env)
        if all(j["state"] in FINAL_STATES for j in jobs) or time.monotonic() > deadline:
            return jobs
        time.sleep(0.5)


@contextmanager
def _serving(command: str, cwd: Path, env: dict[str, str]) -> Iterator[dict[str, Any]]:
    """``command`` (a ``dlsched serve``) in the background until the block ends; yields its
    record, completed with its exit code and log when it has been stopped (SIGTERM)."""
    log = cwd.parent / f"serve-{time.monotonic_ns()}.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen(
            ["bash", "-c", f"exec {command}"],
            cwd=cwd,
            env={**env, "PYTHONUNBUFFERED": "1"},
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    record: dict[str, Any] = {"command": command, "background": True}
    deadline = time.monotonic() + 120
    while "dlsched service at " not in log.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    try:
        yield record
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            record["rc"] = proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            record["rc"] = proc.wait()
        record["log"] = log.read_text()


def run_session(spec: dict[str, Any]) -> dict[str, Any]:
    """Run ``spec["commands"]`` in ``spec["cwd"]``: a ``dlsched serve`` keeps running in the
    background, a command in ``spec["after_jobs_final"]`` first waits until every job is
    final; at the end, the jobs as ``dlsched jobs --json`` lists them once all are final."""
    cwd = Path(spec["cwd"])
    env = user_env(spec.get("env"))
    results: list[dict[str, Any]] = []
    jobs: list[dict[str, Any]] = []
    with ExitStack() as stack:
        if spec.get("slurm"):
            from dlsched.testing.slurm_cluster import SlurmCluster

            cluster = stack.enter_context(SlurmCluster(directory=cwd.parent / "slurm"))
            env = user_env({**spec.get("env", {}), **cluster.env})
        for command in spec["commands"]:
            if command.startswith(SERVE_PREFIX):
                results.append(stack.enter_context(_serving(command, cwd, env)))
                continue
            if command in spec.get("after_jobs_final", ()):
                _wait_final(cwd, env, spec["timeout"])
            results.append(run_command(command, cwd, env, spec["timeout"]))
        if any(r.get("background") for r in results):
            jobs = _wait_final(cwd, env, spec["timeout"])
    return {"results": results, "jobs": jobs}


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[0]).read_text())
    Path(spec["result"]).write_text(json.dumps(run_session(spec)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
