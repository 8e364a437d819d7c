"""Plugins from other installed distributions: a policy class listed under the
``dlsched.policies`` entry-point group is found beside the built-in ones and runs a simulation."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pyarrow.compute as pc
import pytest

from dlsched.cluster.parse import resolve_cluster
from dlsched.policy.base import Policy
from dlsched.policy.registry import policies
from dlsched.registry import discover
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import simulate
from dlsched.trace.bundled import bundled_trace_path
from dlsched.trace.read import read_trace


def _install(site: Path, module: str, source: str, entries: str) -> None:
    """A distribution as pip would leave it: the module and its dist-info with entry points."""
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    info = site / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entries))


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(tmp_path))
    policies.cache_clear()
    yield tmp_path
    policies.cache_clear()
    for name in [m for m in sys.modules if m.startswith("dlsched_test_plugin")]:
        del sys.modules[name]


def test_an_installed_policy_is_found_and_runs(site: Path) -> None:
    _install(
        site,
        "dlsched_test_plugin_lifo",
        """
        from dataclasses import dataclass
        from dlsched.policy.base import Policy

        @dataclass(frozen=True)
        class Lifo(Policy):
            name = "test-lifo"
            description = "newest job first"

            def key(self, job, now):
                return (-job.submit_time, float(job.seq))
        """,
        """
        [dlsched.policies]
        lifo = dlsched_test_plugin_lifo:Lifo
        """,
    )
    assert "test-lifo" in policies() and "fifo" in policies()
    trace = read_trace(bundled_trace_path("vc_0e4a51")).trace
    cluster = resolve_cluster("32x8")
    lifo = simulate(trace, cluster, SimConfig(policy="test-lifo"))
    fifo = simulate(trace, cluster, SimConfig(policy="fifo"))
    finished = [
        int(pc.sum(pc.equal(r.jobs.column("status"), "finished")).as_py()) for r in (lifo, fifo)
    ]
    assert finished == [990, 990]
    assert lifo.summary["avg_jct_s"] != fifo.summary["avg_jct_s"]


def test_an_entry_point_that_is_not_a_policy_is_named(site: Path) -> None:
    _install(
        site,
        "dlsched_test_plugin_bad",
        "NOT_A_CLASS = 3\n",
        """
        [dlsched.policies]
        bad = dlsched_test_plugin_bad:NOT_A_CLASS
        """,
    )
    with pytest.raises(RuntimeError, match=r"entry point 'bad'.*not a concrete Policy"):
        discover("dlsched.policy", Policy, "dlsched.policies")  # type: ignore[type-abstract]


def test_a_plugin_cannot_take_a_built_in_name(site: Path) -> None:
    _install(
        site,
        "dlsched_test_plugin_dup",
        """
        from dlsched.policy.fifo import Fifo

        class Mine(Fifo):
            name = "fifo"
        """,
        """
        [dlsched.policies]
        mine = dlsched_test_plugin_dup:Mine
        """,
    )
    with pytest.raises(RuntimeError, match="two Policy plugins are named 'fifo'"):
        discover("dlsched.policy", Policy, "dlsched.policies")  # type: ignore[type-abstract]
