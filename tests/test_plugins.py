"""Plugins: the built-in policies declared by the catalog are what their classes say they are,
and each is imported only when looked up; a policy class listed under the ``dlsched.policies``
(or ``dlsched.elastic_policies``) entry-point group of another installed distribution is found
beside the built-in ones and runs a simulation."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pyarrow.compute as pc
import pytest

import dlsched.ps
from dlsched.cluster.parse import resolve_cluster
from dlsched.elastic.policy import ElasticPolicy
from dlsched.policy.base import Policy
from dlsched.policy.catalog import (
    ELASTIC_POLICIES,
    PS_POLICIES,
    elastic_policies,
    ordering_kinds,
    policy_catalog,
)
from dlsched.policy.registry import policies
from dlsched.ps.policies import make_policy
from dlsched.registry import Declared, Plugins, discover
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
    elastic_policies.cache_clear()
    yield tmp_path
    policies.cache_clear()
    elastic_policies.cache_clear()
    for name in [m for m in sys.modules if m.startswith("dlsched_test_plugin")]:
        del sys.modules[name]


# ---- the catalog: declared metadata equals the implementations' own ---------------------------


def test_every_elastic_policy_is_declared_as_its_class_describes_itself() -> None:
    """A new module of dlsched.elastic.policies needs its line in ELASTIC_POLICIES, and a
    declaration must name the class, its name and its description exactly."""
    found = discover("dlsched.elastic.policies", ElasticPolicy)  # type: ignore[type-abstract]
    declared = {d.name: d for d in ELASTIC_POLICIES}
    assert sorted(declared) == sorted(found), "declare each in dlsched.policy.catalog"
    for name, cls in found.items():
        assert (declared[name].module, declared[name].attr) == (cls.__module__, cls.__name__)
        assert declared[name].description == cls.description, name
        assert elastic_policies()[name] is cls


def test_every_ps_policy_is_declared_as_its_class_describes_itself() -> None:
    """Every PS allocation policy class (``decide`` and a ``description``, in a
    ``dlsched.ps.policy_*`` module) is declared in PS_POLICIES with its own description."""
    classes = {}
    for info in pkgutil.iter_modules(dlsched.ps.__path__):
        if not info.name.startswith("policy_"):
            continue
        module = importlib.import_module(f"dlsched.ps.{info.name}")
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if obj.__module__ == module.__name__ and "description" in vars(obj):
                assert callable(getattr(obj, "decide", None)), obj
                classes[(obj.__module__, obj.__name__)] = obj.description
    declared = {(d.module, d.attr): d.description for d in PS_POLICIES}
    assert declared == classes
    for d in PS_POLICIES:
        assert type(make_policy(d.name)).__name__ == d.attr


def test_the_catalog_is_what_the_policies_say() -> None:
    """``dlsched list policies`` (the catalog) equals the rows read off the loaded classes."""
    expected = [
        (name, ordering_kinds(cls.needs_run_time, cls.needs_estimate), cls.description)
        for name, cls in sorted(policies().items())
    ]
    expected += [(n, "elastic", c.description) for n, c in sorted(elastic_policies().items())]
    expected += sorted(
        (d.name, "ps", str(getattr(make_policy(d.name), "description", ""))) for d in PS_POLICIES
    )
    assert policy_catalog() == expected
    assert {"fifo", "tiresias", "pollux", "gavel", "smd"} <= {row[0] for row in expected}


def test_a_policy_is_imported_only_when_looked_up() -> None:
    """Listing the catalog imports no allocation policy; creating Pollux imports Pollux and
    not Gavel (whose LP solver is scipy.optimize) or ONES."""
    code = textwrap.dedent(
        """
        import sys
        from dlsched.policy.catalog import policy_catalog
        policy_catalog()
        early = sorted(m for m in sys.modules if m.startswith(("dlsched.elastic", "dlsched.ps")))
        assert early == [], early
        from dlsched.elastic.registry import create_elastic_policy
        create_elastic_policy("pollux")
        assert "dlsched.elastic.policies.pollux" in sys.modules
        for other in ("gavel", "ones", "optimus", "themis"):
            assert f"dlsched.elastic.policies.{other}" not in sys.modules, other
        assert "scipy.optimize" not in sys.modules
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_declaration_that_does_not_match_its_class_is_named() -> None:
    wrong = Plugins(
        [Declared("fast", "dlsched.policy.fifo", "Fifo", "not FIFO")],
        "dlsched.policy.base:Policy",
        None,
        "policy",
    )
    assert "fast" in wrong and list(wrong) == ["fast"] and wrong.description("fast") == "not FIFO"
    with pytest.raises(
        RuntimeError, match=r"policy 'fast' is declared as dlsched.policy.fifo:Fifo"
    ):
        wrong["fast"]
    with pytest.raises(KeyError):
        wrong["slow"]


# ---- plugins of other distributions ----------------------------------------------------------


def test_an_installed_elastic_policy_is_listed_and_found(site: Path) -> None:
    _install(
        site,
        "dlsched_test_plugin_greedy",
        """
        from dlsched.elastic.policies.pollux import Pollux

        class Greedy(Pollux):
            name = "test-greedy"
            description = "Pollux under another name"
        """,
        """
        [dlsched.elastic_policies]
        greedy = dlsched_test_plugin_greedy:Greedy
        """,
    )
    found = elastic_policies()
    assert "test-greedy" in found and found["test-greedy"].__name__ == "Greedy"
    assert ("test-greedy", "elastic", "Pollux under another name") in policy_catalog()


def test_an_installed_elastic_policy_cannot_take_a_built_in_name(site: Path) -> None:
    _install(
        site,
        "dlsched_test_plugin_dup_elastic",
        """
        from dlsched.elastic.policies.pollux import Pollux

        class Mine(Pollux):
            name = "gavel"
        """,
        """
        [dlsched.elastic_policies]
        mine = dlsched_test_plugin_dup_elastic:Mine
        """,
    )
    with pytest.raises(RuntimeError, match="two ElasticPolicy plugins are named 'gavel'"):
        list(elastic_policies())


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
