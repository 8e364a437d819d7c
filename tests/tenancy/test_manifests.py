"""Reading Kueue manifests: what is modelled, and a one-line error naming the file, document
and field for what is not usable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dlsched.tenancy.errors import TenancyError
from dlsched.tenancy.manifests import read_manifests
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
         "spec: 'admissionChecks' is not modelled"),
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
