"""Reading Kueue manifests: what is modelled, and a one-line error naming the file, document
and field for what is not usable."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from dlsched.tenancy.errors import TenancyError
from dlsched.tenancy.manifests import read_manifests
from dlsched.tenancy.model import (
    HOLD,
    HOLD_AND_DRAIN,
    STOP_NONE,
    ClusterQueue,
    LabelRequirement,
    LabelSelector,
    Tenancy,
)
from dlsched.tenancy.quantity import parse_quantity
from tests.tenancy.kueue_manifests import API, documents, write


def _cq(spec: dict[str, Any], name: str = "a") -> dict[str, Any]:
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


FLAVOR = {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "default-flavor"}}


def _group(**quota: Any) -> list[dict[str, Any]]:
    return [
        {
            "coveredResources": ["nvidia.com/gpu"],
            "flavors": [
                {"name": "default-flavor", "resources": [{"name": "nvidia.com/gpu", **quota}]}
            ],
        }
    ]


def test_reads_queues_cohorts_and_local_queues(tmp_path: Path) -> None:
    docs = documents(
        {"a": {"gpu": 4, "cohort": "pool", "borrow": 2}, "b": {"gpu": "8", "cohort": "pool"}},
        {"pool": {"gpu": 2}},
    )
    docs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    docs.append(
        {
            "apiVersion": API,
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        }
    )
    tenancy = read_manifests(write(tmp_path / "q.yaml", docs))
    assert list(tenancy.cluster_queues) == ["a", "b"]
    a = tenancy.cluster_queues["a"]
    quota = a.resource_groups[0].flavors[0].resources["nvidia.com/gpu"]
    assert (quota.nominal, quota.borrowing_limit, quota.lending_limit) == (4.0, 2.0, None)
    assert a.cohort == "pool"
    assert tenancy.local_queue("team-b/b").cluster_queue == "b"
    assert tenancy.local_queue("b").cluster_queue == "b"
    assert tenancy.priority("high") == 1000
    assert tenancy.priority(None) == 0


def test_quantities() -> None:
    assert parse_quantity("500m", "x") == 0.5
    assert parse_quantity("36Gi", "x") == 36 * 2**30
    assert parse_quantity(8, "x") == 8.0
    with pytest.raises(TenancyError, match="x: expected a quantity"):
        parse_quantity("eight", "x")


@pytest.mark.parametrize(
    ("docs", "message"),
    [
        ([FLAVOR, _cq({"resourceGroups": _group(nominalQuota="lots")})], r"document 2 "
         r"\(ClusterQueue 'a'\): spec.resourceGroups\[0\].flavors\[0\].resources\[0\]"
         r".nominalQuota: expected a quantity"),
        ([FLAVOR, _cq({"resourceGroups": _group(nominalQuota=4, borrowingLimit=1)})],
         "borrowingLimit and lendingLimit need a cohort"),
        ([FLAVOR, _cq({"cohort": "c", "resourceGroups": _group(nominalQuota=4, lendingLimit=5)})],
         "lendingLimit: 5 exceeds nominalQuota 4"),
        ([_cq({"resourceGroups": _group(nominalQuota=4)})],
         "flavor 'default-flavor' has no ResourceFlavor"),
        ([FLAVOR, _cq({"queueingStrategy": "Random", "resourceGroups": _group(nominalQuota=4)})],
         "spec.queueingStrategy: expected one of StrictFIFO, BestEffortFIFO, got 'Random'"),
        ([FLAVOR, _cq({"admissionChecks": ["x"], "resourceGroups": _group(nominalQuota=4)})],
         "spec.admissionChecks: admission checks are not modelled"),
        ([FLAVOR, _cq({"resourceGroups": _group(nominalQuota=4)}),
          {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": "q"},
           "spec": {"clusterQueue": "nope"}}],
         "document 3 \\(LocalQueue 'q'\\): spec.clusterQueue 'nope' is not a ClusterQueue"),
        ([FLAVOR, {"apiVersion": API, "kind": "Cohort", "metadata": {"name": "x"},
                   "spec": {"parentName": "y"}},
          {"apiVersion": API, "kind": "Cohort", "metadata": {"name": "y"},
           "spec": {"parentName": "x"}},
          _cq({"cohort": "x", "resourceGroups": _group(nominalQuota=4)})],
         "cohorts form a cycle"),
        ([FLAVOR], "no ClusterQueue"),
        ([FLAVOR, _cq({"resourceGroups": _group(nominalQuota=4)}),
          _cq({"resourceGroups": _group(nominalQuota=4)})], "defined again"),
        ([FLAVOR, {"apiVersion": API, "kind": "Topology", "metadata": {"name": "t"}}],
         "kind 'Topology' is not modelled"),
    ],
)  # fmt: skip
def test_bad_manifests_name_document_and_field(
    tmp_path: Path, docs: list[dict[str, Any]], message: str
) -> None:
    path = write(tmp_path / "bad.yaml", docs)
    with pytest.raises(TenancyError, match=message) as info:
        read_manifests(path)
    assert str(info.value).startswith(str(path))
    assert "\n" not in str(info.value)


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("apiVersion: kueue.x-k8s.io/v1beta1\nkind: [ClusterQueue\n")
    with pytest.raises(TenancyError, match=r"bad.yaml:\d+: not valid YAML"):
        read_manifests(path)


def test_bundled_manifests_by_name() -> None:
    tenancy = read_manifests("philly-cohort")
    assert len(tenancy.cluster_queues) == 11
    assert {cq.cohort for cq in tenancy.cluster_queues.values()} == {"philly"}
    with pytest.raises(FileNotFoundError, match="bundled: philly-cohort"):
        read_manifests("no-such-queues")


# --- Every field of Kueue's API: read into the model, refused naming it, or of no effect. ---

KUEUE_SOURCE = {
    "project": "kubernetes-sigs/kueue",
    "commit": "ff69552e79ad21652c36caa97038382e55625cf7",
}
KUEUE_API: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {
    # (kind, version): (file and Go type at KUEUE_SOURCE's commit, its JSON field names).
    # Spec fields for the queue objects; top-level fields (after TypeMeta and ObjectMeta) for
    # WorkloadPriorityClass, which has no spec, and for Configuration (ControllerManager's
    # fields are inlined into it).
    ("ResourceFlavor", "v1beta2"): (
        "apis/kueue/v1beta2/resourceflavor_types.go ResourceFlavorSpec",
        ("nodeLabels", "nodeTaints", "tolerations", "topologyName"),
    ),
    ("ResourceFlavor", "v1beta1"): (
        "apis/kueue/v1beta1/resourceflavor_types.go ResourceFlavorSpec",
        ("nodeLabels", "nodeTaints", "tolerations", "topologyName"),
    ),
    ("ClusterQueue", "v1beta2"): (
        "apis/kueue/v1beta2/clusterqueue_types.go ClusterQueueSpec",
        ("resourceGroups", "cohortName", "queueingStrategy", "namespaceSelector",
         "flavorFungibility", "preemption", "admissionChecksStrategy", "stopPolicy",
         "fairSharing", "admissionScope", "concurrentAdmissionPolicy"),
    ),
    ("ClusterQueue", "v1beta1"): (
        "apis/kueue/v1beta1/clusterqueue_types.go ClusterQueueSpec",
        ("resourceGroups", "cohort", "queueingStrategy", "namespaceSelector",
         "flavorFungibility", "preemption", "admissionChecks", "admissionChecksStrategy",
         "stopPolicy", "fairSharing", "admissionScope"),
    ),
    ("Cohort", "v1beta2"): (
        "apis/kueue/v1beta2/cohort_types.go CohortSpec",
        ("parentName", "resourceGroups", "fairSharing"),
    ),
    ("Cohort", "v1beta1"): (
        "apis/kueue/v1beta1/cohort_types.go CohortSpec",
        ("parentName", "resourceGroups", "fairSharing"),
    ),
    ("LocalQueue", "v1beta2"): (
        "apis/kueue/v1beta2/localqueue_types.go LocalQueueSpec",
        ("clusterQueue", "stopPolicy", "fairSharing"),
    ),
    ("LocalQueue", "v1beta1"): (
        "apis/kueue/v1beta1/localqueue_types.go LocalQueueSpec",
        ("clusterQueue", "stopPolicy", "fairSharing"),
    ),
    ("WorkloadPriorityClass", "v1beta2"): (
        "apis/kueue/v1beta2/workloadpriorityclass_types.go WorkloadPriorityClass",
        ("value", "description"),
    ),
    ("WorkloadPriorityClass", "v1beta1"): (
        "apis/kueue/v1beta1/workloadpriorityclass_types.go WorkloadPriorityClass",
        ("value", "description"),
    ),
    ("Configuration", "v1beta2"): (
        "apis/config/v1beta2/configuration_types.go Configuration, ControllerManager",
        ("namespace", "webhook", "leaderElection", "metrics", "health", "pprofBindAddress",
         "controller", "tls", "manageJobsWithoutQueueName", "managedJobsNamespaceSelector",
         "internalCertManagement", "waitForPodsReady", "clientConnection", "integrations",
         "multiKueue", "fairSharing", "admissionFairSharing", "resources", "featureGates",
         "objectRetentionPolicies", "visibilityServer"),
    ),
    ("Configuration", "v1beta1"): (
        "apis/config/v1beta1/configuration_types.go Configuration, ControllerManager",
        ("namespace", "webhook", "leaderElection", "metrics", "health", "pprofBindAddress",
         "controller", "tls", "manageJobsWithoutQueueName", "managedJobsNamespaceSelector",
         "internalCertManagement", "waitForPodsReady", "clientConnection", "integrations",
         "queueVisibility", "multiKueue", "fairSharing", "admissionFairSharing", "resources",
         "featureGates", "objectRetentionPolicies"),
    ),
}  # fmt: skip

REFUSED = "refused"
NO_EFFECT = "no effect"
BOTH = ("v1beta1", "v1beta2")
Getter = Callable[[Tenancy], object]
_GPU8 = [
    {
        "coveredResources": ["nvidia.com/gpu"],
        "flavors": [
            {"name": "default-flavor", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}
        ],
    }
]


def _cq_a(t: Tenancy) -> ClusterQueue:
    return t.cluster_queues["a"]


# (kind, versions, field, a value, outcome): outcome is what the value does to the model
# (a getter whose result must differ from the manifests without the field), REFUSED (a
# one-line error naming the file, document and field) or NO_EFFECT (the model is the same).
FIELD_CASES: list[tuple[str, tuple[str, ...], str, Any, Getter | str]] = [
    ("ResourceFlavor", BOTH, "nodeLabels", {"gpu-type": "v100"},
     lambda t: t.flavors["f"].node_labels),
    ("ResourceFlavor", BOTH, "nodeTaints",
     [{"key": "instance", "value": "spot", "effect": "NoSchedule"}],
     lambda t: t.flavors["f"].node_taints),
    ("ResourceFlavor", BOTH, "nodeTaints", [{"key": "instance", "effect": "Sometimes"}],
     REFUSED),
    ("ResourceFlavor", BOTH, "nodeTaints", [], NO_EFFECT),
    ("ResourceFlavor", BOTH, "tolerations",
     [{"key": "instance", "operator": "Equal", "value": "spot", "effect": "NoSchedule"}],
     lambda t: t.flavors["f"].tolerations),
    ("ResourceFlavor", BOTH, "tolerations", [{"operator": "Equal", "value": "spot"}], REFUSED),
    ("ResourceFlavor", BOTH, "topologyName", "default", REFUSED),
    ("ClusterQueue", BOTH, "resourceGroups", _GPU8, lambda t: _cq_a(t).resource_groups),
    ("ClusterQueue", ("v1beta1",), "cohort", "pool", lambda t: _cq_a(t).cohort),
    ("ClusterQueue", ("v1beta2",), "cohortName", "pool", lambda t: _cq_a(t).cohort),
    ("ClusterQueue", BOTH, "queueingStrategy", "StrictFIFO",
     lambda t: _cq_a(t).queueing_strategy),
    ("ClusterQueue", BOTH, "namespaceSelector", {}, NO_EFFECT),
    ("ClusterQueue", BOTH, "namespaceSelector", {"matchLabels": {}, "matchExpressions": []},
     NO_EFFECT),
    ("ClusterQueue", BOTH, "namespaceSelector", {"matchLabels": {"team": "a"}},
     lambda t: _cq_a(t).namespace_selector),
    ("ClusterQueue", BOTH, "namespaceSelector",
     {"matchExpressions": [{"key": "team", "operator": "In", "values": ["a"]}]},
     lambda t: _cq_a(t).namespace_selector),
    ("ClusterQueue", BOTH, "namespaceSelector", None, lambda t: _cq_a(t).namespace_selector),
    ("ClusterQueue", BOTH, "namespaceSelector",
     {"matchExpressions": [{"key": "team", "operator": "Gt", "values": ["1"]}]}, REFUSED),
    ("ClusterQueue", BOTH, "flavorFungibility", {"whenCanBorrow": "TryNextFlavor"},
     lambda t: _cq_a(t).fungibility),
    ("ClusterQueue", BOTH, "flavorFungibility", {"preference": "PreemptionOverBorrowing"},
     lambda t: _cq_a(t).fungibility),
    ("ClusterQueue", BOTH, "flavorFungibility", {"preference": "Cheapest"}, REFUSED),
    ("ClusterQueue", BOTH, "preemption", {"withinClusterQueue": "LowerPriority"},
     lambda t: _cq_a(t).preemption),
    ("ClusterQueue", ("v1beta1",), "admissionChecks", ["prov"], REFUSED),
    ("ClusterQueue", ("v1beta1",), "admissionChecks", [], NO_EFFECT),
    ("ClusterQueue", BOTH, "admissionChecksStrategy", {"admissionChecks": [{"name": "prov"}]},
     REFUSED),
    ("ClusterQueue", BOTH, "stopPolicy", "None", NO_EFFECT),
    ("ClusterQueue", BOTH, "stopPolicy", "Hold", lambda t: _cq_a(t).stop_policy),
    ("ClusterQueue", BOTH, "stopPolicy", "HoldAndDrain", lambda t: _cq_a(t).stop_policy),
    ("ClusterQueue", BOTH, "stopPolicy", "Paused", REFUSED),
    ("ClusterQueue", BOTH, "fairSharing", {"weight": "2"}, lambda t: _cq_a(t).weight),
    ("ClusterQueue", BOTH, "admissionScope", {"admissionMode": "UsageBasedAdmissionFairSharing"},
     REFUSED),
    ("ClusterQueue", BOTH, "admissionScope", {"admissionMode": "NoAdmissionFairSharing"},
     NO_EFFECT),
    ("ClusterQueue", ("v1beta2",), "concurrentAdmissionPolicy",
     {"migration": {"mode": "TryPreferredFlavors"}}, REFUSED),
    ("Cohort", BOTH, "parentName", "root", lambda t: t.cohorts["c"].parent),
    ("Cohort", BOTH, "resourceGroups", _GPU8, lambda t: t.cohorts["c"].resource_groups),
    ("Cohort", BOTH, "fairSharing", {"weight": "2"}, lambda t: t.cohorts["c"].weight),
    ("LocalQueue", BOTH, "clusterQueue", "b",
     lambda t: t.local_queues["team-a/q"].cluster_queue),
    ("LocalQueue", BOTH, "stopPolicy", "None", NO_EFFECT),
    ("LocalQueue", BOTH, "stopPolicy", "Hold",
     lambda t: t.local_queues["team-a/q"].stop_policy),
    ("LocalQueue", BOTH, "stopPolicy", "HoldAndDrain",
     lambda t: t.local_queues["team-a/q"].stop_policy),
    ("LocalQueue", BOTH, "stopPolicy", "Paused", REFUSED),
    ("LocalQueue", BOTH, "fairSharing", {"weight": "2"}, REFUSED),
    ("WorkloadPriorityClass", BOTH, "value", 1000, lambda t: t.priority("p")),
    ("WorkloadPriorityClass", BOTH, "description", "for urgent jobs", NO_EFFECT),
    ("Configuration", BOTH, "namespace", "kueue-system", NO_EFFECT),
    ("Configuration", BOTH, "webhook", {"port": 9443}, NO_EFFECT),
    ("Configuration", BOTH, "leaderElection", {"leaderElect": True}, NO_EFFECT),
    ("Configuration", BOTH, "metrics", {"bindAddress": ":8443"}, NO_EFFECT),
    ("Configuration", BOTH, "health", {"healthProbeBindAddress": ":8081"}, NO_EFFECT),
    ("Configuration", BOTH, "pprofBindAddress", ":8083", NO_EFFECT),
    ("Configuration", BOTH, "controller", {"groupKindConcurrency": {"Job.batch": 5}},
     NO_EFFECT),
    ("Configuration", BOTH, "tls", {"minVersion": "VersionTLS13"}, NO_EFFECT),
    ("Configuration", BOTH, "manageJobsWithoutQueueName", True, NO_EFFECT),
    ("Configuration", BOTH, "managedJobsNamespaceSelector",
     {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                            "values": ["kube-system", "kueue-system"]}]}, NO_EFFECT),
    ("Configuration", BOTH, "internalCertManagement", {"enable": False}, NO_EFFECT),
    ("Configuration", ("v1beta1",), "waitForPodsReady", {"enable": True, "timeout": "5m"},
     lambda t: t.clock.pods_ready),
    ("Configuration", ("v1beta1",), "waitForPodsReady", {"enable": False}, NO_EFFECT),
    ("Configuration", ("v1beta2",), "waitForPodsReady", {"timeout": "5m"},
     lambda t: t.clock.pods_ready),
    ("Configuration", BOTH, "waitForPodsReady",
     {"enable": True, "recoveryTimeout": "3m"} , REFUSED),
    ("Configuration", BOTH, "clientConnection", {"qps": 300, "burst": 500}, NO_EFFECT),
    ("Configuration", BOTH, "integrations", {"frameworks": ["batch/job", "pod"]}, NO_EFFECT),
    ("Configuration", ("v1beta1",), "queueVisibility", {"updateIntervalSeconds": 5},
     NO_EFFECT),
    ("Configuration", BOTH, "multiKueue", {"gcInterval": "1m"}, NO_EFFECT),
    ("Configuration", ("v1beta1",), "fairSharing", {"enable": True},
     lambda t: t.fair_sharing),
    ("Configuration", ("v1beta1",), "fairSharing",
     {"enable": False, "preemptionStrategies": ["LessThanInitialShare"]}, NO_EFFECT),
    ("Configuration", ("v1beta2",), "fairSharing",
     {"preemptionStrategies": ["LessThanInitialShare"]}, lambda t: t.fair_sharing),
    ("Configuration", BOTH, "admissionFairSharing",
     {"usageHalfLifeTime": "168h", "usageSamplingInterval": "5m"}, REFUSED),
    ("Configuration", BOTH, "resources", {"excludeResourcePrefixes": ["example.com/"]},
     REFUSED),
    ("Configuration", BOTH, "resources", {}, NO_EFFECT),
    ("Configuration", BOTH, "featureGates", {"TopologyAwareScheduling": False}, REFUSED),
    ("Configuration", BOTH, "objectRetentionPolicies", {"workloads": {"afterFinished": "1h"}},
     NO_EFFECT),
    ("Configuration", ("v1beta2",), "visibilityServer", {"bindPort": 8082}, NO_EFFECT),
]  # fmt: skip

_TOP_LEVEL = ("WorkloadPriorityClass", "Configuration")
_DOC_NAME = {
    "ResourceFlavor": "f",
    "ClusterQueue": "a",
    "Cohort": "c",
    "LocalQueue": "q",
    "WorkloadPriorityClass": "p",
    "Configuration": "",
}


def _field_docs(kind: str, version: str, set_field: dict[str, Any]) -> list[dict[str, Any]]:
    """Manifests with one object of ``kind`` (in ``version``), with ``set_field`` added to
    its spec (or top level); the object is document 5, after the flavor and two queues."""
    gpu4 = _group(nominalQuota=4)
    docs: list[dict[str, Any]] = [
        FLAVOR,
        _cq({"namespaceSelector": {}, "resourceGroups": gpu4}, "b"),
        {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": "other"},
         "spec": {"clusterQueue": "b"}},
        {"apiVersion": API, "kind": "Cohort", "metadata": {"name": "pool"}, "spec": {}},
    ]  # fmt: skip
    group = "config.kueue.x-k8s.io" if kind == "Configuration" else "kueue.x-k8s.io"
    obj: dict[str, Any] = {"apiVersion": f"{group}/{version}", "kind": kind}
    if kind != "Configuration":
        obj["metadata"] = {"name": _DOC_NAME[kind]}
    base: dict[str, Any] = {
        "ResourceFlavor": {},
        "ClusterQueue": {"namespaceSelector": {}, "resourceGroups": gpu4},
        "Cohort": {},
        "LocalQueue": {"clusterQueue": "a"},
        "WorkloadPriorityClass": {"value": 1},
        "Configuration": {},
    }[kind]
    if kind == "LocalQueue":
        obj["metadata"]["namespace"] = "team-a"
    fields = {**base, **set_field}
    if kind in _TOP_LEVEL:
        obj.update(fields)
    else:
        obj["spec"] = fields
    docs.append(obj)
    if kind != "ClusterQueue":
        docs.append(_cq({"namespaceSelector": {}, "resourceGroups": gpu4}, "a"))
    return docs


def test_field_cases_cover_every_field_of_kueue_api() -> None:
    assert len(KUEUE_SOURCE["commit"]) == 40
    for (kind, version), (source, fields) in KUEUE_API.items():
        assert source.startswith(f"apis/{'config' if kind == 'Configuration' else 'kueue'}/")
        assert f"/{version}/" in source
        covered = {f for k, vs, f, _, out in FIELD_CASES if k == kind and version in vs}
        assert covered == set(fields), (kind, version, set(fields) ^ covered)
        # Every field is read into the model or refused for some value (none only ignored),
        # except those Kueue itself gives no bearing on admission.
        decided = {
            f
            for k, vs, f, _, out in FIELD_CASES
            if k == kind and version in vs and out != NO_EFFECT
        }
        assert set(fields) - decided <= {
            "namespace", "webhook", "leaderElection", "metrics", "health", "pprofBindAddress",
            "controller", "tls", "manageJobsWithoutQueueName", "managedJobsNamespaceSelector",
            "internalCertManagement", "clientConnection", "integrations", "queueVisibility",
            "multiKueue", "objectRetentionPolicies", "visibilityServer", "description",
        }  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "version", "field", "value", "outcome"),
    [(k, v, f, value, out) for k, vs, f, value, out in FIELD_CASES for v in vs],
    ids=[
        f"{k}-{v}-{f}-{out if isinstance(out, str) else 'read'}-{i}"
        for i, (k, vs, f, _, out) in enumerate(FIELD_CASES)
        for v in vs
    ],
)
def test_each_kueue_field_is_read_or_refused(
    tmp_path: Path, kind: str, version: str, field: str, value: Any, outcome: Getter | str
) -> None:
    base = read_manifests(write(tmp_path / "base.yaml", _field_docs(kind, version, {})))
    path = write(tmp_path / "q.yaml", _field_docs(kind, version, {field: value}))
    if outcome == REFUSED:
        with pytest.raises(TenancyError) as info:
            read_manifests(path)
        message = str(info.value)
        path_in_doc = field if kind in _TOP_LEVEL else f"spec.{field}"
        assert message.startswith(
            f"{path}: document 5 ({kind} {_DOC_NAME[kind]!r}): {path_in_doc}"
        ), message
        assert "\n" not in message
        return
    tenancy = read_manifests(path)
    if outcome == NO_EFFECT:
        assert replace(tenancy, source="") == replace(base, source="")
    else:
        assert callable(outcome)
        assert outcome(tenancy) != outcome(base)


@pytest.mark.parametrize(
    ("kind", "where"),
    [
        ("ResourceFlavor", "spec.nodeSelector"),
        ("ClusterQueue", "spec.cohortname"),
        ("Cohort", "spec.parent_name"),
        ("LocalQueue", "spec.queue"),
        ("WorkloadPriorityClass", "priority"),
        ("Configuration", "fairsharing"),
    ],
)
def test_unknown_fields_are_refused_naming_them(tmp_path: Path, kind: str, where: str) -> None:
    path = write(tmp_path / "q.yaml", _field_docs(kind, "v1beta2", {where.split(".")[-1]: 1}))
    message = rf"document 5 \({kind} .*\): {where}: not modelled by dlsched, or misspelt"
    with pytest.raises(TenancyError, match=message):
        read_manifests(path)


def _two_groups(first: str, second: str) -> list[dict[str, Any]]:
    return [
        {"coveredResources": [r],
         "flavors": [{"name": f, "resources": [{"name": r, "nominalQuota": 4}]}]}
        for r, f in ((first, "default-flavor"), (second, "other"))
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("docs", "message"),
    [
        # Two resources counting one request: a job's GPUs would be charged to each.
        ([FLAVOR, {**FLAVOR, "metadata": {"name": "other"}},
          _cq({"resourceGroups": _two_groups("nvidia.com/gpu", "amd.com/gpu")})],
         r"spec.resourceGroups\[1\].coveredResources: 'amd.com/gpu' and 'nvidia.com/gpu' "
         r"\(in spec.resourceGroups\[0\]\) both count a job's gpu request"),
        ([FLAVOR, {"apiVersion": API, "kind": "Cohort", "metadata": {"name": "c"},
                   "spec": {"resourceGroups": [
                       {"coveredResources": ["gpu", "example.com/gpu"],
                        "flavors": [{"name": "default-flavor", "resources": [
                            {"name": "gpu", "nominalQuota": 4},
                            {"name": "example.com/gpu", "nominalQuota": 4}]}]}]}},
          _cq({"resourceGroups": _group(nominalQuota=4)})],
         r"document 2 \(Cohort 'c'\): spec.resourceGroups\[0\].coveredResources: "
         r"'example.com/gpu' and 'gpu'"),
        ([FLAVOR, _cq({"stopPolicy": "Paused"})],
         "spec.stopPolicy: expected one of None, Hold, HoldAndDrain, got 'Paused'"),
        ([FLAVOR, _cq({"cohort": "x", "cohortName": "y"})],
         "spec.cohortName: 'y' disagrees with spec.cohort 'x'"),
        ([FLAVOR, _cq({"resourceGroups": _group(nominalQuota=4)}),
          {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
           "fairSharing": {}}],
         r"document 3 \(Configuration ''\): fairSharing.preemptionStrategies: expected one "
         r"of Kueue's lists"),
        ([FLAVOR, _cq({"resourceGroups": _group(nominalQuota=4)}),
          {"apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration",
           "fairSharing": {"enable": True, "preemptionStrategies": [
               "LessThanInitialShare", "LessThanOrEqualToFinalShare"]}}],
         "fairSharing.preemptionStrategies: expected one of Kueue's lists"),
        ([FLAVOR, _cq({"resourceGroups": _group(nominalQuota=4)}),
          {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
           "fairSharing": {"enable": True, "preemptionStrategies": ["LessThanInitialShare"]}}],
         "fairSharing.enable: not a field of config.kueue.x-k8s.io/v1beta2"),
        ([FLAVOR, _cq({"resourceGroups": _group(nominalQuota=4)}),
          {"apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration"},
          {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration"}],
         "document 4 .*: a second Configuration"),
        ([FLAVOR, _cq({"resourceGroups": _group(nominalQuota=4)}),
          {"apiVersion": "config.kueue.x-k8s.io/v1alpha9", "kind": "Configuration"}],
         "apiVersion: expected config.kueue.x-k8s.io/v1beta1 or config.kueue.x-k8s.io/v1beta2"),
        ([FLAVOR, {**_cq({"resourceGroups": _group(nominalQuota=4)}), "sepc": {}}],
         r"document 2 \(ClusterQueue 'a'\): sepc: not modelled"),
    ],
)  # fmt: skip
def test_ambiguous_or_invalid_fields_are_refused(
    tmp_path: Path, docs: list[dict[str, Any]], message: str
) -> None:
    path = write(tmp_path / "bad.yaml", docs)
    with pytest.raises(TenancyError, match=message) as info:
        read_manifests(path)
    assert str(info.value).startswith(str(path))
    assert "\n" not in str(info.value)


def test_quota_on_a_resource_no_job_asks_is_kept(tmp_path: Path) -> None:
    """Kueue charges a workload only what its pods request; no trace job requests
    ephemeral-storage, so its quota is read (and never used)."""
    group = {
        "coveredResources": ["nvidia.com/gpu", "ephemeral-storage"],
        "flavors": [
            {
                "name": "default-flavor",
                "resources": [
                    {"name": "nvidia.com/gpu", "nominalQuota": 4},
                    {"name": "ephemeral-storage", "nominalQuota": "100Gi"},
                ],
            }
        ],
    }
    tenancy = read_manifests(write(tmp_path / "q.yaml", [FLAVOR, _cq({"resourceGroups": [group]})]))
    resources = tenancy.cluster_queues["a"].resource_groups[0].flavors[0].resources
    assert list(resources) == ["nvidia.com/gpu", "ephemeral-storage"]


def test_kueue_default_configuration_reads(tmp_path: Path) -> None:
    """Kueue's own config/components/manager/controller_manager_config.yaml (KUEUE_SOURCE's
    commit, its uncommented lines): controller plumbing only, fair sharing off; with its
    commented-out fairSharing line, fair sharing on (v1beta2: on when present)."""
    config: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {"groupKindConcurrency": {"Job.batch": 5, "Pod": 5}},
        "clientConnection": {"qps": 300, "burst": 500},
        "integrations": {"frameworks": ["batch/job", "kubeflow.org/mpijob", "pod"]},
    }
    queues = [FLAVOR, _cq({"namespaceSelector": {}, "resourceGroups": _group(nominalQuota=4)})]
    assert not read_manifests(write(tmp_path / "a.yaml", [*queues, config])).fair_sharing.enabled
    config["fairSharing"] = {
        "preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
    }
    assert read_manifests(write(tmp_path / "b.yaml", [*queues, config])).fair_sharing.enabled


def _selector_docs(selector: object, *namespaces: dict[str, Any]) -> list[dict[str, Any]]:
    spec: dict[str, Any] = {"resourceGroups": _group(nominalQuota=4)}
    if selector is not ...:
        spec["namespaceSelector"] = selector
    return [FLAVOR, _cq(spec), *namespaces]


def test_namespace_selector_is_read_with_kueue_nil_and_empty(tmp_path: Path) -> None:
    selector = {
        "matchLabels": {"dep": "eng"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["a", "b"]},
            {"key": "tier", "operator": "NotIn", "values": ["c"]},
            {"key": "team", "operator": "Exists"},
            {"key": "legacy", "operator": "DoesNotExist"},
        ],
    }
    read = read_manifests(write(tmp_path / "s.yaml", _selector_docs(selector)))
    got = read.cluster_queues["a"].namespace_selector
    assert got == LabelSelector(
        {"dep": "eng"},
        (
            LabelRequirement("tier", "In", ("a", "b")),
            LabelRequirement("tier", "NotIn", ("c",)),
            LabelRequirement("team", "Exists"),
            LabelRequirement("legacy", "DoesNotExist"),
        ),
    )
    assert got.matches({"dep": "eng", "tier": "a", "team": "x"})
    assert not got.matches({"dep": "eng", "tier": "c", "team": "x"})
    assert not got.matches({"dep": "eng", "tier": "a"})
    assert not got.matches({"dep": "eng", "tier": "a", "team": "x", "legacy": "1"})
    # Kueue: a missing (nil) selector matches no namespace, {} every namespace.
    missing = read_manifests(write(tmp_path / "m.yaml", _selector_docs(...)))
    assert missing.cluster_queues["a"].namespace_selector is None
    null = read_manifests(write(tmp_path / "n.yaml", _selector_docs(None)))
    assert null.cluster_queues["a"].namespace_selector is None
    empty = read_manifests(write(tmp_path / "e.yaml", _selector_docs({})))
    assert empty.cluster_queues["a"].namespace_selector == LabelSelector()


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
         r"spec.namespaceSelector.matchExpressions\[0\].operator: expected one of In, NotIn, "
         r"Exists, DoesNotExist, got 'Gt'"),
        ({"matchExpressions": [{"key": "a", "operator": "In"}]},
         r"matchExpressions\[0\].values: expected a non-empty list with operator In"),
        ({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
         r"matchExpressions\[0\].values: expected no values with operator Exists"),
        ({"matchExpressions": [{"operator": "Exists"}]},
         r"matchExpressions\[0\].key: expected a non-empty name"),
        ({"matchLabels": {"dep": 1}}, r"spec.namespaceSelector.matchLabels.dep: expected a "
         r"string label value"),
        ({"matchFields": {}}, r"spec.namespaceSelector.matchFields: not modelled"),
    ],
)  # fmt: skip
def test_bad_namespace_selectors_are_refused(tmp_path: Path, selector: Any, message: str) -> None:
    path = write(tmp_path / "bad.yaml", _selector_docs(selector))
    with pytest.raises(TenancyError, match=message) as info:
        read_manifests(path)
    assert str(info.value).startswith(f"{path}: document 2 (ClusterQueue 'a'): ")


def _ns(name: str, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, **extra.pop("meta", {})}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta, **extra}


def test_namespaces_and_their_labels_are_read(tmp_path: Path) -> None:
    docs = _selector_docs(
        {},
        _ns("sales", meta={"labels": {"dep": "sales"}, "annotations": {"owner": "x"},
                           "uid": "1", "resourceVersion": "7"},
            spec={"finalizers": ["kubernetes"]}, status={"phase": "Active"}),
        _ns("default"),
    )  # fmt: skip
    tenancy = read_manifests(write(tmp_path / "ns.yaml", docs))
    assert tenancy.namespaces == {"sales": {"dep": "sales"}, "default": {}}
    # Objects of other API groups are still skipped.
    other = [*docs, {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}}]
    assert read_manifests(write(tmp_path / "o.yaml", other)).namespaces == tenancy.namespaces


@pytest.mark.parametrize(
    ("namespace", "message"),
    [
        (_ns("a", meta={"deletionTimestamp": "2024-01-01T00:00:00Z"}),
         r"document 3 \(Namespace 'a'\): metadata.deletionTimestamp: not modelled"),
        (_ns("a", meta={"labels": {"dep": ["x"]}}),
         r"document 3 \(Namespace 'a'\): metadata.labels.dep: expected a string label value"),
        (_ns("a", spec={"finalizers": [], "other": 1}),
         r"document 3 \(Namespace 'a'\): spec.other: not modelled"),
        (_ns("a", extra=1), r"document 3 \(Namespace 'a'\): extra: not modelled"),
        ({"apiVersion": "v1", "kind": "Namespace", "metadata": {}},
         r"document 3 \(Namespace ''\): metadata.name: expected a non-empty name"),
    ],
)  # fmt: skip
def test_bad_namespaces_are_refused(tmp_path: Path, namespace: Any, message: str) -> None:
    path = write(tmp_path / "bad.yaml", _selector_docs({}, namespace))
    with pytest.raises(TenancyError, match=message):
        read_manifests(path)


def test_namespace_defined_twice_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "twice.yaml", _selector_docs({}, _ns("a"), _ns("a")))
    with pytest.raises(TenancyError, match=r"document 4 \(Namespace 'a'\): defined again"):
        read_manifests(path)


def test_stop_policies_are_read(tmp_path: Path) -> None:
    docs = [
        FLAVOR,
        _cq({"stopPolicy": "HoldAndDrain", "resourceGroups": _group(nominalQuota=4)}),
        {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": "q"},
         "spec": {"clusterQueue": "a", "stopPolicy": "Hold"}},
        {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": "r"},
         "spec": {"clusterQueue": "a"}},
    ]  # fmt: skip
    tenancy = read_manifests(write(tmp_path / "stop.yaml", docs))
    assert tenancy.cluster_queues["a"].stop_policy == HOLD_AND_DRAIN
    assert tenancy.local_queues["default/q"].stop_policy == HOLD
    assert tenancy.local_queues["default/r"].stop_policy == STOP_NONE
