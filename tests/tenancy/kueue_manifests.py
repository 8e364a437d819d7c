"""Kueue manifests from a short description, for tests: what an administrator would apply."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

GPU = "nvidia.com/gpu"
API = "kueue.x-k8s.io/v1beta1"
DEFAULT_FLAVOR = "default-flavor"


def _resources(spec: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for key, name in (("cpu", "cpu"), ("gpu", GPU)):
        if key not in spec:
            continue
        entry: dict[str, Any] = {"name": name, "nominalQuota": spec[key]}
        if "borrow" in spec:
            entry["borrowingLimit"] = spec["borrow"]
        if "lend" in spec:
            entry["lendingLimit"] = spec["lend"]
        out.append(entry)
    return out


def _groups(spec: dict[str, Any]) -> list[dict[str, Any]]:
    flavors = spec.get("flavors") or ({DEFAULT_FLAVOR: spec} if "gpu" in spec else {})
    if not flavors:
        return []
    covered = [name for key, name in (("cpu", "cpu"), ("gpu", GPU)) if key in spec] or [GPU]
    return [
        {
            "coveredResources": covered,
            "flavors": [{"name": f, "resources": _resources(q)} for f, q in flavors.items()],
        }
    ]


def _preemption(spec: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "within" in spec:
        out["withinClusterQueue"] = spec["within"]
    if "reclaim" in spec:
        out["reclaimWithinCohort"] = spec["reclaim"]
    if "borrow_within" in spec:
        bwc: dict[str, Any] = {"policy": spec["borrow_within"]}
        if "threshold" in spec:
            bwc["maxPriorityThreshold"] = spec["threshold"]
        out["borrowWithinCohort"] = bwc
    return out


def documents(
    queues: dict[str, dict[str, Any]],
    cohorts: dict[str, dict[str, Any]] | None = None,
    fair_sharing: bool = False,
) -> list[dict[str, Any]]:
    """ResourceFlavors, Cohorts, ClusterQueues and one LocalQueue per ClusterQueue (namespace
    ``team-<name>``, name ``<name>``), plus Kueue's Configuration when fair sharing is on."""
    flavor_names = {DEFAULT_FLAVOR}
    for spec in queues.values():
        flavor_names.update(spec.get("flavors", {}))
    docs: list[dict[str, Any]] = [
        {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": f}}
        for f in sorted(flavor_names)
    ]
    for name, spec in (cohorts or {}).items():
        cspec: dict[str, Any] = {}
        if spec.get("parent"):
            cspec["parentName"] = spec["parent"]
        groups = _groups(spec)
        if groups:
            cspec["resourceGroups"] = groups
        docs.append(
            {"apiVersion": API, "kind": "Cohort", "metadata": {"name": name}, "spec": cspec}
        )
    for name, spec in queues.items():
        qspec: dict[str, Any] = {"namespaceSelector": {}, "resourceGroups": _groups(spec)}
        if "cohort" in spec:
            qspec["cohort"] = spec["cohort"]
        if "strategy" in spec:
            qspec["queueingStrategy"] = spec["strategy"]
        pre = _preemption(spec)
        if pre:
            qspec["preemption"] = pre
        fung = {
            key: spec[short]
            for short, key in (
                ("when_can_borrow", "whenCanBorrow"),
                ("when_can_preempt", "whenCanPreempt"),
            )
            if short in spec
        }
        if fung:
            qspec["flavorFungibility"] = fung
        docs.append(
            {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": qspec}
        )
        docs.append(
            {
                "apiVersion": API,
                "kind": "LocalQueue",
                "metadata": {"name": name, "namespace": f"team-{name}"},
                "spec": {"clusterQueue": name},
            }
        )
    if fair_sharing:
        docs.append(
            {
                "apiVersion": "config.kueue.x-k8s.io/v1beta1",
                "kind": "Configuration",
                "fairSharing": {"enable": True},
            }
        )
    return docs


def write(path: Path, docs: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path
