"""The curated public API: exactly these names, each importable and documented."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import types

import pytest

import dlsched

EXPECTED = {
    "Allocation",
    "CheckpointConfig",
    "ClusterSpec",
    "ClusterView",
    "ElasticPolicy",
    "Experiment",
    "FaultConfig",
    "JobInfo",
    "JobSpec",
    "NodeSpec",
    "PerfBook",
    "Plan",
    "PowerConfig",
    "PsJob",
    "Resize",
    "RestartCost",
    "RunResult",
    "Selection",
    "ServiceClient",
    "ServiceConfig",
    "SimConfig",
    "Simulator",
    "Start",
    "Trace",
    "__version__",
    "build_workload",
    "create_placer",
    "create_policy",
    "merge_traces",
    "placers",
    "policies",
    "policy_catalog",
    "read_parquet",
    "read_trace",
    "resolve_cluster",
    "run_experiment",
    "serve",
    "simulate",
    "workload_trace",
    "write_parquet",
}


def test_exported_names_are_exactly_the_curated_set() -> None:
    assert set(dlsched.__all__) == EXPECTED
    public = {
        n
        for n in dir(dlsched)
        if not n.startswith("_") and not isinstance(getattr(dlsched, n), types.ModuleType)
    }
    assert public == EXPECTED - {"__version__"}


def test_names_are_imported_on_first_use() -> None:
    """``import dlsched`` pulls in no simulator (every command pays for what it imports);
    each name then resolves to the object its module defines."""
    code = (
        "import sys, dlsched\n"
        "heavy = [m for m in ('dlsched.sim.simulator', 'dlsched.runner', 'pyarrow', 'numpy')"
        " if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "from dlsched.sim.simulator import simulate\n"
        "assert dlsched.simulate is simulate\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = dlsched.nothing  # type: ignore[attr-defined]


def test_every_export_is_documented() -> None:
    for name in EXPECTED - {"__version__"}:
        obj = getattr(dlsched, name)
        assert obj.__doc__ and obj.__doc__.strip(), f"{name} has no docstring"


@pytest.mark.parametrize("package", ["dlsched", "dlsched.trace"])
def test_no_lazy_name_is_also_a_submodule(package: str) -> None:
    """Importing a submodule sets the package attribute of its name: a lazily exported name
    equal to a submodule's would then be the module, not the exported object."""
    module = importlib.import_module(package)
    submodules = {m.name for m in pkgutil.iter_modules(module.__path__)}
    assert not submodules & set(module.__all__)


def test_the_policy_catalog_imports_no_allocation_policy() -> None:
    """``dlsched.policy_catalog()`` lists the elastic and PS policies from their declarations
    (dlsched.policy.catalog): none of them, nor scipy's optimizers, is imported."""
    code = (
        "import sys, dlsched\n"
        "names = {name for name, _, _ in dlsched.policy_catalog()}\n"
        "assert {'fifo', 'pollux', 'gavel', 'smd'} <= names, names\n"
        "loaded = [m for m in sys.modules if m.startswith(('dlsched.elastic', 'dlsched.ps', "
        "'scipy.optimize'))]\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
