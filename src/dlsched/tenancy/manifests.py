"""Reading Kueue's own manifests: the multi-document YAML files a cluster's administrators
already apply (``kubectl apply -f``), into a validated :class:`~dlsched.tenancy.model.Tenancy`.

Read kinds: ``ResourceFlavor``, ``ClusterQueue``, ``Cohort``, ``LocalQueue``,
``WorkloadPriorityClass`` (``kueue.x-k8s.io``, v1beta1 and v1beta2 spellings), Kueue's
``Configuration`` (``config.kueue.x-k8s.io``, for ``fairSharing``) and ``Namespace`` (``v1``:
its name and labels, into :attr:`Tenancy.namespaces`; other metadata that decides nothing,
``annotations``, ``uid``, ..., and ``spec.finalizers`` are dropped, anything else refused).
Documents of other API groups (Jobs, ...) are skipped. Every field of the read kinds is either
modelled or refused at read time, never ignored: a field that changes admission and is not
modelled is refused unless empty. A ResourceFlavor's ``nodeTaints`` and ``tolerations`` are
modelled (a workload whose pods do not tolerate a NoSchedule/NoExecute taint does not get the
flavor; trace jobs tolerate none). A ClusterQueue's ``namespaceSelector`` is read
(``matchLabels``, ``matchExpressions`` with ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``;
another operator is refused) with Kueue's meaning of a missing one: nil, matching no namespace
(None in the model), while ``{}`` matches every namespace. A workload's namespace is its
LocalQueue's (trace jobs reach their LocalQueue through the queue map): one whose namespace
the selector does not match is never admitted, and a run sets it aside with that reason, as
Kueue would leave it pending for ever. ``stopPolicy`` ``Hold`` and ``HoldAndDrain`` of a
ClusterQueue or LocalQueue are modelled as a queue stopped for the whole run: its workloads
are never admitted (set aside with the reason). The Configuration's ``waitForPodsReady`` is
modelled under Kueue's cycle clock (:class:`~dlsched.tenancy.model.PodsReady`; a job's pods
are ready when it starts), its ``recoveryTimeout`` only as ``0s``. Refused: a
ResourceFlavor's ``topologyName``; a ClusterQueue's ``admissionChecks``,
``admissionChecksStrategy``, ``concurrentAdmissionPolicy`` and ``admissionScope`` other than
``NoAdmissionFairSharing``; a LocalQueue's ``fairSharing``; the Configuration's
``admissionFairSharing``, ``resources`` and ``featureGates``; two resources of one
ClusterQueue or Cohort that count the same request (``nvidia.com/gpu`` and ``amd.com/gpu``);
any unknown field. Accepted with no effect: the
Configuration's controller plumbing (webhook, metrics, leader election, client connection,
...) and its choice of which jobs and namespaces Kueue manages (every dlsched job names its
LocalQueue), a WorkloadPriorityClass's ``description``, objects' ``status``. Quotas on
resources other than GPUs (any name ending in ``gpu``), ``cpu``, ``memory`` and ``pods`` are
accepted, each its own kind, and charge trace jobs nothing: Kueue charges a workload only what
its pods request, and no trace job requests other resources. Every error is one line naming
the file, the document (1-based, with its kind and name) and the field. Needs PyYAML (``pip
install 'dlsched[tenancy]'``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dlsched import safe_load
from dlsched.extras import require
from dlsched.tenancy.errors import TenancyError
from dlsched.tenancy.model import (
    BEST_EFFORT_FIFO,
    BORROW,
    BORROW_POLICIES,
    BORROWING_OVER_PREEMPTION,
    HOLD,
    HOLD_AND_DRAIN,
    LESS_THAN_INITIAL,
    LESS_THAN_OR_EQUAL_FINAL,
    MAY_STOP_SEARCH,
    NEVER,
    PREEMPT,
    PREEMPTION_OVER_BORROWING,
    RECLAIM_POLICIES,
    STOP_NONE,
    STRICT_FIFO,
    TRY_NEXT_FLAVOR,
    WITHIN_CQ_POLICIES,
    ClusterQueue,
    Cohort,
    FairSharing,
    FlavorQuotas,
    Fungibility,
    KueueClock,
    LabelRequirement,
    LabelSelector,
    LocalQueue,
    PodsReady,
    Preemption,
    PriorityClass,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Taint,
    Tenancy,
    Toleration,
    resource_kind,
)
from dlsched.tenancy.quantity import in_units, parse_quantity

KUEUE_GROUP = "kueue.x-k8s.io"
CONFIG_GROUP = "config.kueue.x-k8s.io"
CONFIG_VERSIONS = ("v1beta1", "v1beta2")
_OBJECT_KEYS = {"apiVersion", "kind", "metadata", "spec", "status"}
"""A Kueue object's top-level keys (``status``: observed state, which reading drops)."""

# Fields Kueue reads that change admission and dlsched does not model: refused unless empty.
_ADMISSION_CHECKS = "admission checks are not modelled (a workload would wait for each check)"
_FLAVOR_REFUSED = {
    "topologyName": "topology-aware scheduling by flavor is not modelled "
    "(dlsched's is --placement topology)",
}
_CQ_REFUSED = {
    "admissionChecks": _ADMISSION_CHECKS,
    "admissionChecksStrategy": _ADMISSION_CHECKS,
    "concurrentAdmissionPolicy": "concurrent admission (workload variants migrating between "
    "flavors) is not modelled",
}
_LQ_REFUSED = {
    "fairSharing": "admission fair sharing (LocalQueue weights) is not modelled",
}
_CONFIG_REFUSED = {
    "admissionFairSharing": "admission fair sharing (ordering by LocalQueue usage) is not modelled",
    "resources": "resource exclusions, transformations, quota check strategies and device "
    "class mappings change what a workload is charged; not modelled",
    "featureGates": "feature gates change admission; dlsched models Kueue's default gates",
}
# Configuration fields with no bearing on which workload is admitted where, read and dropped:
# the controller's plumbing (namespace, webhook, leader election, metrics, health, pprof,
# controller concurrency, TLS, client connection, certificates, visibility servers), which
# job kinds and namespaces Kueue manages (every dlsched job names its LocalQueue through the
# queue map, so none is left unmanaged), MultiKueue's controller (MultiKueue works through
# admission checks, refused) and the deletion of finished or deactivated Workload objects
# (which hold no quota).
_CONFIG_INERT = {
    "namespace",
    "webhook",
    "leaderElection",
    "metrics",
    "health",
    "pprofBindAddress",
    "controller",
    "tls",
    "clientConnection",
    "internalCertManagement",
    "visibilityServer",
    "queueVisibility",
    "integrations",
    "manageJobsWithoutQueueName",
    "managedJobsNamespaceSelector",
    "multiKueue",
    "objectRetentionPolicies",
}
_STOP_POLICIES = (STOP_NONE, HOLD, HOLD_AND_DRAIN)
_NAMESPACE_METADATA = {
    "name",
    "labels",
    "annotations",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
}
"""A Namespace's metadata read (``name``, ``labels``) or dropped as deciding nothing; other
metadata (``deletionTimestamp``, ``ownerReferences``, ...) is refused."""
_STRATEGY_LISTS = (
    (LESS_THAN_OR_EQUAL_FINAL,),
    (LESS_THAN_INITIAL,),
    (LESS_THAN_OR_EQUAL_FINAL, LESS_THAN_INITIAL),
)
"""The fairSharing.preemptionStrategies lists Kueue's configuration validation accepts."""


class _Doc:
    """One manifest document, for error messages that say where."""

    def __init__(self, path: str, index: int, kind: str, name: str) -> None:
        self.where = f"{path}: document {index} ({kind} {name!r})"

    def fail(self, field: str, expected: str, got: object) -> TenancyError:
        return TenancyError(f"{self.where}: {field}: expected {expected}, got {got!r}")


def _mapping(doc: _Doc, value: object, field: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise doc.fail(field, "a mapping", value)
    return value


def _list(doc: _Doc, value: object, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise doc.fail(field, "a list", value)
    return value


def _name(doc: _Doc, value: object, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise doc.fail(field, "a non-empty name", value)
    return value


_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def _duration(doc: _Doc, value: object, field: str) -> float:
    """Seconds of a Go duration (``5m``, ``1h30m``, ``90s``), as Kubernetes writes them."""
    text = value if isinstance(value, str) else ""
    parts = _DURATION.findall(text)
    if not text or "".join(n + u for n, u in parts) != text:
        raise doc.fail(field, "a duration such as 5m, 90s or 1h30m", value)
    seconds = sum(float(n) * _DURATION_UNITS[u] for n, u in parts)
    if seconds > 1e9:
        raise doc.fail(field, "a duration of at most 10^9 s", value)
    return seconds


def _count(doc: _Doc, value: object, field: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value < 2**31:
        raise doc.fail(field, f"a whole number >= {least}", value)
    return value


_BACKOFF_FIELDS = ("backoffLimitCount", "backoffBaseSeconds", "backoffMaxSeconds")


def _pods_ready(doc: _Doc, value: object, v1beta1: bool) -> PodsReady:
    """The Configuration's ``waitForPodsReady`` with Kueue's defaults of its version: timeout
    5m (v1beta1) or 30m (v1beta2), ``blockAdmission`` true (v1beta1, when enabled) or false
    (v1beta2), requeuing by eviction time after 60 s doubling up to 3600 s, no limit.
    ``recoveryTimeout`` is refused unless ``0s``: a job whose pods fail after it ran is not
    timed again."""
    field = "waitForPodsReady"
    wait = _mapping(doc, value, field)
    allowed = {"timeout", "blockAdmission", "requeuingStrategy", "recoveryTimeout"}
    _keys(doc, wait, field, allowed | ({"enable"} if v1beta1 else set()))
    timeout = _duration(doc, wait.get("timeout", "5m" if v1beta1 else "30m"), f"{field}.timeout")
    block = wait.get("blockAdmission", v1beta1)
    if not isinstance(block, bool):
        raise doc.fail(f"{field}.blockAdmission", "true or false", block)
    recovery = wait.get("recoveryTimeout")
    if recovery is not None and _duration(doc, recovery, f"{field}.recoveryTimeout") != 0:
        raise TenancyError(
            f"{doc.where}: {field}.recoveryTimeout: timing a job again after its pods fail "
            f"while it runs is not modelled; write 0s (off) or leave it out; got {recovery!r}"
        )
    strategy = _mapping(doc, wait.get("requeuingStrategy"), f"{field}.requeuingStrategy")
    sfield = f"{field}.requeuingStrategy"
    _keys(doc, strategy, sfield, {"timestamp", *_BACKOFF_FIELDS})
    stamp = _choice(
        doc, strategy.get("timestamp"), f"{sfield}.timestamp", ("Eviction", "Creation"), "Eviction"
    )
    raw_limit = strategy.get("backoffLimitCount")
    limit = None if raw_limit is None else _count(doc, raw_limit, f"{sfield}.backoffLimitCount", 0)
    base = _count(doc, strategy.get("backoffBaseSeconds", 60), f"{sfield}.backoffBaseSeconds", 0)
    most = _count(doc, strategy.get("backoffMaxSeconds", 3600), f"{sfield}.backoffMaxSeconds", 0)
    return PodsReady(
        timeout=timeout,
        backoff_base=float(base),
        backoff_max=float(most),
        backoff_limit=limit,
        block_admission=block,
        requeue_by_eviction=stamp == "Eviction",
    )


def _choice(doc: _Doc, value: object, field: str, allowed: tuple[str, ...], default: str) -> str:
    if value is None:
        return default
    if value not in allowed:
        raise doc.fail(field, "one of " + ", ".join(allowed), value)
    return str(value)


def _keys(doc: _Doc, data: Mapping[str, Any], field: str, allowed: set[str]) -> None:
    """Refuse a key of ``data`` (at ``field``; "" for a document's top level) outside
    ``allowed``: a field dlsched does not model, or a misspelt one."""
    extra = sorted(set(data) - allowed, key=str)
    if extra:
        path = f"{field}.{extra[0]}" if field else str(extra[0])
        raise TenancyError(
            f"{doc.where}: {path}: not modelled by dlsched, or misspelt (known fields: "
            f"{', '.join(sorted(allowed))})"
        )


def _empty(value: object) -> bool:
    """None, or an empty mapping, list or string: a field that sets nothing."""
    return value is None or (isinstance(value, (Mapping, list, str)) and not value)


def _refuse_set(doc: _Doc, data: Mapping[str, Any], field: str, refused: Mapping[str, str]) -> None:
    """Refuse any field of ``refused`` (name -> why) that ``data`` (at ``field``) sets."""
    for key, why in refused.items():
        if not _empty(data.get(key)):
            raise TenancyError(f"{doc.where}: {field}{key}: {why}; got {data[key]!r}")


def _stop_policy(doc: _Doc, spec: Mapping[str, Any]) -> str:
    """A queue's ``stopPolicy``: ``None`` (Kueue's default), ``Hold`` or ``HoldAndDrain``."""
    return _choice(doc, spec.get("stopPolicy"), "spec.stopPolicy", _STOP_POLICIES, STOP_NONE)


def _alias(doc: _Doc, spec: Mapping[str, Any], old: str, new: str) -> object:
    """A field Kueue's versions spell two ways (v1beta1 ``old``, v1beta2 ``new``)."""
    both = spec.get(old) not in (None, "") and spec.get(new) not in (None, "")
    if both and spec[old] != spec[new]:
        raise TenancyError(
            f"{doc.where}: spec.{new}: {spec[new]!r} disagrees with spec.{old} "
            f"{spec[old]!r}; give one"
        )
    return spec.get(new) if spec.get(new) not in (None, "") else spec.get(old)


def _weight(doc: _Doc, spec: Mapping[str, Any]) -> float:
    fair = _mapping(doc, spec.get("fairSharing"), "spec.fairSharing")
    _keys(doc, fair, "spec.fairSharing", {"weight"})
    if "weight" not in fair:
        return 1.0
    return parse_quantity(fair["weight"], f"{doc.where}: spec.fairSharing.weight")


def _amount(doc: _Doc, res: Mapping[str, Any], resource: str, field: str, key: str) -> float | None:
    """``res[key]`` as an amount of ``resource`` in dlsched's units (None when absent)."""
    if res.get(key) is None:
        return None
    return in_units(resource, parse_quantity(res[key], f"{doc.where}: {field}.{key}"))


def _groups(doc: _Doc, spec: Mapping[str, Any], has_cohort: bool) -> tuple[ResourceGroup, ...]:
    groups: list[ResourceGroup] = []
    seen_flavors: set[str] = set()
    for gi, raw in enumerate(_list(doc, spec.get("resourceGroups"), "spec.resourceGroups")):
        gfield = f"spec.resourceGroups[{gi}]"
        group = _mapping(doc, raw, gfield)
        _keys(doc, group, gfield, {"coveredResources", "flavors"})
        covered = tuple(
            _name(doc, r, f"{gfield}.coveredResources")
            for r in _list(doc, group.get("coveredResources"), f"{gfield}.coveredResources")
        )
        if not covered:
            raise doc.fail(f"{gfield}.coveredResources", "a non-empty list", covered)
        flavors: list[FlavorQuotas] = []
        for fi, fraw in enumerate(_list(doc, group.get("flavors"), f"{gfield}.flavors")):
            ffield = f"{gfield}.flavors[{fi}]"
            flavor = _mapping(doc, fraw, ffield)
            _keys(doc, flavor, ffield, {"name", "resources"})
            fname = _name(doc, flavor.get("name"), f"{ffield}.name")
            if fname in seen_flavors:
                raise TenancyError(
                    f"{doc.where}: {ffield}.name: flavor {fname!r} appears twice "
                    "(a flavor belongs to at most one resource group)"
                )
            seen_flavors.add(fname)
            quotas: dict[str, ResourceQuota] = {}
            for ri, rraw in enumerate(_list(doc, flavor.get("resources"), f"{ffield}.resources")):
                rfield = f"{ffield}.resources[{ri}]"
                res = _mapping(doc, rraw, rfield)
                _keys(doc, res, rfield, {"name", "nominalQuota", "borrowingLimit", "lendingLimit"})
                rname = _name(doc, res.get("name"), f"{rfield}.name")

                nominal = _amount(doc, res, rname, rfield, "nominalQuota")
                if nominal is None:
                    raise doc.fail(f"{rfield}.nominalQuota", "a quantity", None)
                borrow = _amount(doc, res, rname, rfield, "borrowingLimit")
                lend = _amount(doc, res, rname, rfield, "lendingLimit")
                if (borrow is not None or lend is not None) and not has_cohort:
                    raise TenancyError(
                        f"{doc.where}: {rfield}: borrowingLimit and lendingLimit need a cohort"
                    )
                if lend is not None and lend > nominal:
                    raise TenancyError(
                        f"{doc.where}: {rfield}.lendingLimit: {lend:g} exceeds nominalQuota "
                        f"{nominal:g}"
                    )
                quotas[rname] = ResourceQuota(nominal, borrow, lend)
            if tuple(quotas) != covered:
                raise TenancyError(
                    f"{doc.where}: {ffield}.resources: expected exactly the covered resources "
                    f"{list(covered)} in that order, got {list(quotas)}"
                )
            flavors.append(FlavorQuotas(fname, quotas))
        groups.append(ResourceGroup(covered, tuple(flavors)))
    covered_all = [r for g in groups for r in g.covered]
    dup = sorted({r for r in covered_all if covered_all.count(r) > 1})
    if dup:
        raise TenancyError(f"{doc.where}: resource {dup[0]!r} is covered by two resource groups")
    # A dlsched job asks GPUs, CPUs, memory and pods, not resource names: two names that count
    # the same request (nvidia.com/gpu and amd.com/gpu) would each charge all of it. Any other
    # name (ephemeral-storage, example.com/foo) is a kind of its own: Kueue charges a workload
    # only what its pods request, and no trace job requests it, so its quota is never used,
    # borrowed or lent by trace jobs, which is what Kueue does with such jobs.
    by_kind: dict[str, tuple[str, str]] = {}
    for gi, g in enumerate(groups):
        for r in g.covered:
            kind = resource_kind(r)
            if kind in by_kind:
                first, where = by_kind[kind]
                raise TenancyError(
                    f"{doc.where}: spec.resourceGroups[{gi}].coveredResources: {r!r} and "
                    f"{first!r} (in {where}) both count a job's {kind} request, which would be "
                    "charged to each; keep one name per kind (flavors' nodeLabels tell GPU "
                    "types apart)"
                )
            by_kind[kind] = (r, f"spec.resourceGroups[{gi}]")
    return tuple(groups)


_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def _labels(doc: _Doc, value: object, field: str) -> dict[str, str]:
    """A Kubernetes label map (string keys and values)."""
    out: dict[str, str] = {}
    for key, val in _mapping(doc, value, field).items():
        if not isinstance(key, str) or not key:
            raise doc.fail(field, "label keys that are non-empty strings", key)
        if not isinstance(val, str):
            raise doc.fail(f"{field}.{key}", "a string label value", val)
        out[key] = val
    return out


def _namespace_selector(doc: _Doc, spec: Mapping[str, Any]) -> LabelSelector | None:
    """A ClusterQueue's ``namespaceSelector``: None when missing (Kueue's nil selector, which
    matches no namespace), else its ``matchLabels`` and ``matchExpressions`` (``In``,
    ``NotIn``, ``Exists``, ``DoesNotExist``); ``{}`` matches every namespace."""
    field = "spec.namespaceSelector"
    if spec.get("namespaceSelector") is None:
        return None
    selector = _mapping(doc, spec["namespaceSelector"], field)
    _keys(doc, selector, field, {"matchLabels", "matchExpressions"})
    labels = _labels(doc, selector.get("matchLabels"), f"{field}.matchLabels")
    requirements: list[LabelRequirement] = []
    raw = _list(doc, selector.get("matchExpressions"), f"{field}.matchExpressions")
    for i, item in enumerate(raw):
        efield = f"{field}.matchExpressions[{i}]"
        expr = _mapping(doc, item, efield)
        _keys(doc, expr, efield, {"key", "operator", "values"})
        key = _name(doc, expr.get("key"), f"{efield}.key")
        operator = expr.get("operator")
        if operator not in _SELECTOR_OPERATORS:
            raise doc.fail(
                f"{efield}.operator", "one of " + ", ".join(_SELECTOR_OPERATORS), operator
            )
        values = _list(doc, expr.get("values"), f"{efield}.values")
        if any(not isinstance(v, str) for v in values):
            raise doc.fail(f"{efield}.values", "a list of strings", values)
        # Kubernetes' validation: In and NotIn need values, Exists and DoesNotExist take none.
        if operator in ("In", "NotIn") and not values:
            raise doc.fail(f"{efield}.values", f"a non-empty list with operator {operator}", values)
        if operator in ("Exists", "DoesNotExist") and values:
            raise doc.fail(f"{efield}.values", f"no values with operator {operator}", values)
        requirements.append(LabelRequirement(key, str(operator), tuple(values)))
    return LabelSelector(labels, tuple(requirements))


def _admission_scope(doc: _Doc, spec: Mapping[str, Any]) -> None:
    field = "spec.admissionScope"
    scope = _mapping(doc, spec.get("admissionScope"), field)
    _keys(doc, scope, field, {"admissionMode"})
    if scope.get("admissionMode") not in (None, "NoAdmissionFairSharing"):
        raise TenancyError(
            f"{doc.where}: {field}.admissionMode: {scope['admissionMode']!r}: admission fair "
            "sharing is not modelled; only NoAdmissionFairSharing is"
        )


TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def _taints(doc: _Doc, raw: object) -> tuple[Taint, ...]:
    """A flavor's ``nodeTaints`` (key required, an effect of :data:`TAINT_EFFECTS`)."""
    out: list[Taint] = []
    for i, item in enumerate(_list(doc, raw, "spec.nodeTaints")):
        field = f"spec.nodeTaints[{i}]"
        taint = _mapping(doc, item, field)
        _keys(doc, taint, field, {"key", "value", "effect", "timeAdded"})
        effect = _choice(doc, taint.get("effect"), f"{field}.effect", TAINT_EFFECTS, "")
        if not effect:
            raise doc.fail(f"{field}.effect", "one of " + ", ".join(TAINT_EFFECTS), None)
        key = _name(doc, taint.get("key"), f"{field}.key")
        out.append(Taint(key, str(taint.get("value") or ""), effect))
    return tuple(out)


def tolerations(doc: _Doc, raw: object, where: str) -> tuple[Toleration, ...]:
    """Kubernetes tolerations (operator ``Equal``, the default, or ``Exists``; an
    ``Exists`` toleration takes no value; an empty effect tolerates every effect)."""
    out: list[Toleration] = []
    for i, item in enumerate(_list(doc, raw, where)):
        field = f"{where}[{i}]"
        tol = _mapping(doc, item, field)
        _keys(doc, tol, field, {"key", "operator", "value", "effect", "tolerationSeconds"})
        operator = _choice(doc, tol.get("operator"), f"{field}.operator", ("Equal", "Exists"),
                           "Equal")  # fmt: skip
        effect = _choice(doc, tol.get("effect"), f"{field}.effect", ("", *TAINT_EFFECTS), "")
        value = str(tol.get("value") or "")
        if operator == "Exists" and value:
            raise doc.fail(f"{field}.value", "no value with operator Exists", value)
        key = str(tol.get("key") or "")
        if not key and operator != "Exists":
            raise doc.fail(f"{field}.key", "a key (only Exists may leave it empty)", None)
        out.append(Toleration(key, operator, value, effect))
    return tuple(out)


def _cluster_queue(doc: _Doc, name: str, spec: Mapping[str, Any]) -> ClusterQueue:
    allowed = {
        "cohort",
        "cohortName",
        "resourceGroups",
        "queueingStrategy",
        "preemption",
        "flavorFungibility",
        "fairSharing",
        "stopPolicy",
        "namespaceSelector",
        "admissionScope",
        *_CQ_REFUSED,
    }
    _keys(doc, spec, "spec", allowed)
    _refuse_set(doc, spec, "spec.", _CQ_REFUSED)
    stop_policy = _stop_policy(doc, spec)
    namespace_selector = _namespace_selector(doc, spec)
    _admission_scope(doc, spec)
    cohort_raw = _alias(doc, spec, "cohort", "cohortName")
    cohort = None if cohort_raw in (None, "") else _name(doc, cohort_raw, "spec.cohort")
    pre = _mapping(doc, spec.get("preemption"), "spec.preemption")
    _keys(
        doc,
        pre,
        "spec.preemption",
        {"withinClusterQueue", "reclaimWithinCohort", "borrowWithinCohort"},
    )
    bwc = _mapping(doc, pre.get("borrowWithinCohort"), "spec.preemption.borrowWithinCohort")
    _keys(doc, bwc, "spec.preemption.borrowWithinCohort", {"policy", "maxPriorityThreshold"})
    threshold = bwc.get("maxPriorityThreshold")
    if threshold is not None and not isinstance(threshold, int):
        raise doc.fail(
            "spec.preemption.borrowWithinCohort.maxPriorityThreshold", "an integer", threshold
        )
    preemption = Preemption(
        _choice(
            doc,
            pre.get("withinClusterQueue"),
            "spec.preemption.withinClusterQueue",
            WITHIN_CQ_POLICIES,
            NEVER,
        ),
        _choice(
            doc,
            pre.get("reclaimWithinCohort"),
            "spec.preemption.reclaimWithinCohort",
            RECLAIM_POLICIES,
            NEVER,
        ),
        _choice(
            doc,
            bwc.get("policy"),
            "spec.preemption.borrowWithinCohort.policy",
            BORROW_POLICIES,
            NEVER,
        ),
        threshold,
    )
    if preemption.borrow_within_cohort != NEVER and preemption.reclaim_within_cohort == NEVER:
        raise TenancyError(
            f"{doc.where}: spec.preemption.borrowWithinCohort needs reclaimWithinCohort other "
            "than Never"
        )
    fung = _mapping(doc, spec.get("flavorFungibility"), "spec.flavorFungibility")
    _keys(doc, fung, "spec.flavorFungibility", {"whenCanBorrow", "whenCanPreempt", "preference"})
    # v1beta2 spells v1beta1's Borrow and Preempt as MayStopSearch.
    when_borrow = _choice(
        doc,
        fung.get("whenCanBorrow"),
        "spec.flavorFungibility.whenCanBorrow",
        (BORROW, MAY_STOP_SEARCH, TRY_NEXT_FLAVOR),
        BORROW,
    )
    when_preempt = _choice(
        doc,
        fung.get("whenCanPreempt"),
        "spec.flavorFungibility.whenCanPreempt",
        (PREEMPT, MAY_STOP_SEARCH, TRY_NEXT_FLAVOR),
        TRY_NEXT_FLAVOR,
    )
    preference = _choice(
        doc,
        fung.get("preference"),
        "spec.flavorFungibility.preference",
        (BORROWING_OVER_PREEMPTION, PREEMPTION_OVER_BORROWING),
        BORROWING_OVER_PREEMPTION,
    )
    fungibility = Fungibility(
        BORROW if when_borrow == MAY_STOP_SEARCH else when_borrow,
        PREEMPT if when_preempt == MAY_STOP_SEARCH else when_preempt,
        preference,
    )
    strategy = _choice(
        doc,
        spec.get("queueingStrategy"),
        "spec.queueingStrategy",
        (STRICT_FIFO, BEST_EFFORT_FIFO),
        BEST_EFFORT_FIFO,
    )
    return ClusterQueue(
        name,
        cohort,
        _groups(doc, spec, cohort is not None),
        strategy,
        preemption,
        fungibility,
        _weight(doc, spec),
        namespace_selector,
        stop_policy,
    )


def _cohort(doc: _Doc, name: str, spec: Mapping[str, Any]) -> Cohort:
    # parent: v1alpha1's spelling of parentName.
    _keys(doc, spec, "spec", {"parent", "parentName", "resourceGroups", "fairSharing"})
    parent_raw = _alias(doc, spec, "parent", "parentName")
    parent = None if parent_raw in (None, "") else _name(doc, parent_raw, "spec.parent")
    return Cohort(name, parent, _groups(doc, spec, parent is not None), _weight(doc, spec))


class _Builder:
    def __init__(self) -> None:
        self.flavors: dict[str, ResourceFlavor] = {}
        self.cqs: dict[str, ClusterQueue] = {}
        self.cohorts: dict[str, Cohort] = {}
        self.lqs: dict[str, LocalQueue] = {}
        self.pcs: dict[str, PriorityClass] = {}
        self.fair = FairSharing()
        self.namespaces: dict[str, dict[str, str]] = {}
        self.where: dict[tuple[str, str], str] = {}

    def add(self, path: str, index: int, data: Mapping[str, Any]) -> None:
        api = str(data.get("apiVersion", ""))
        kind = str(data.get("kind", ""))
        group = api.split("/", 1)[0]
        if api == "v1" and kind == "Namespace":
            self._namespace_doc(path, index, data)
            return
        if group not in (KUEUE_GROUP, CONFIG_GROUP):
            return
        meta = data.get("metadata") or {}
        name = str(meta.get("name", "")) if isinstance(meta, Mapping) else ""
        doc = _Doc(path, index, kind or "?", name)
        if group == CONFIG_GROUP:
            self._configuration(doc, api, kind, data)
            return
        if kind not in (
            "ResourceFlavor",
            "ClusterQueue",
            "Cohort",
            "LocalQueue",
            "WorkloadPriorityClass",
        ):
            raise TenancyError(
                f"{doc.where}: kind {kind!r} is not modelled; dlsched reads ResourceFlavor, "
                "ClusterQueue, Cohort, LocalQueue, WorkloadPriorityClass and Configuration"
            )
        name = _name(doc, name, "metadata.name")
        if kind == "WorkloadPriorityClass":
            # A priority class has no spec: its value (and a description) sit at the top.
            _keys(doc, data, "", {"apiVersion", "kind", "metadata", "value", "description"})
        else:
            _keys(doc, data, "", _OBJECT_KEYS)
        spec = _mapping(doc, data.get("spec"), "spec")
        key = (kind, name if kind != "LocalQueue" else f"{self._namespace(doc, meta)}/{name}")
        if key in self.where:
            raise TenancyError(f"{doc.where}: defined again (first in {self.where[key]})")
        self.where[key] = doc.where
        if kind == "ResourceFlavor":
            _keys(doc, spec, "spec", {"nodeLabels", "nodeTaints", "tolerations", *_FLAVOR_REFUSED})
            _refuse_set(doc, spec, "spec.", _FLAVOR_REFUSED)
            labels = _mapping(doc, spec.get("nodeLabels"), "spec.nodeLabels")
            self.flavors[name] = ResourceFlavor(
                name,
                {str(k): str(v) for k, v in labels.items()},
                _taints(doc, spec.get("nodeTaints")),
                tolerations(doc, spec.get("tolerations"), "spec.tolerations"),
            )
        elif kind == "ClusterQueue":
            self.cqs[name] = _cluster_queue(doc, name, spec)
        elif kind == "Cohort":
            self.cohorts[name] = _cohort(doc, name, spec)
        elif kind == "LocalQueue":
            _keys(doc, spec, "spec", {"clusterQueue", "stopPolicy", *_LQ_REFUSED})
            _refuse_set(doc, spec, "spec.", _LQ_REFUSED)
            stop_policy = _stop_policy(doc, spec)
            cq = _name(doc, spec.get("clusterQueue"), "spec.clusterQueue")
            lq = LocalQueue(self._namespace(doc, meta), name, cq, stop_policy)
            self.lqs[lq.ref] = lq
        else:
            value = data.get("value")
            if not isinstance(value, int) or isinstance(value, bool):
                raise doc.fail("value", "an integer priority", value)
            self.pcs[name] = PriorityClass(name, value)

    def _namespace_doc(self, path: str, index: int, data: Mapping[str, Any]) -> None:
        """A ``Namespace``: its name and labels (which ClusterQueues' ``namespaceSelector``
        match); other metadata that decides nothing is dropped, anything else refused."""
        meta = data.get("metadata") or {}
        name = str(meta.get("name", "")) if isinstance(meta, Mapping) else ""
        doc = _Doc(path, index, "Namespace", name)
        _keys(doc, data, "", _OBJECT_KEYS)
        meta = _mapping(doc, data.get("metadata"), "metadata")
        _keys(doc, meta, "metadata", _NAMESPACE_METADATA)
        name = _name(doc, meta.get("name"), "metadata.name")
        spec = _mapping(doc, data.get("spec"), "spec")
        # spec.finalizers: how the namespace is deleted, not which queue admits its workloads.
        _keys(doc, spec, "spec", {"finalizers"})
        key = ("Namespace", name)
        if key in self.where:
            raise TenancyError(f"{doc.where}: defined again (first in {self.where[key]})")
        self.where[key] = doc.where
        self.namespaces[name] = _labels(doc, meta.get("labels"), "metadata.labels")

    @staticmethod
    def _namespace(doc: _Doc, meta: Mapping[str, Any]) -> str:
        ns = meta.get("namespace", "default")
        return _name(doc, ns, "metadata.namespace")

    pods_ready: PodsReady | None = None

    def _configuration(self, doc: _Doc, api: str, kind: str, data: Mapping[str, Any]) -> None:
        if kind != "Configuration":
            raise TenancyError(
                f"{doc.where}: kind {kind!r} is not modelled; of {CONFIG_GROUP} dlsched reads "
                "Configuration"
            )
        version = api.split("/", 1)[1] if "/" in api else ""
        if version not in CONFIG_VERSIONS:
            raise doc.fail(
                "apiVersion", " or ".join(f"{CONFIG_GROUP}/{v}" for v in CONFIG_VERSIONS), api
            )
        if ("Configuration", "") in self.where:
            first = self.where[("Configuration", "")]
            raise TenancyError(f"{doc.where}: a second Configuration (first in {first})")
        self.where[("Configuration", "")] = doc.where
        _keys(
            doc,
            data,
            "",
            {
                "apiVersion",
                "kind",
                "metadata",
                "fairSharing",
                "waitForPodsReady",
                *_CONFIG_REFUSED,
                *_CONFIG_INERT,
            },
        )
        _refuse_set(doc, data, "", _CONFIG_REFUSED)
        # v1beta1 turns waitForPodsReady and fairSharing on with "enable"; v1beta2 by their
        # presence (its conversion drops a v1beta1 one whose enable is false).
        v1beta1 = version == "v1beta1"
        wait = data.get("waitForPodsReady")
        if wait is not None and (not v1beta1 or self._enabled(doc, wait, "waitForPodsReady")):
            self.pods_ready = _pods_ready(doc, wait, v1beta1)
        raw_fair = data.get("fairSharing")
        if raw_fair is None:
            return
        fair = _mapping(doc, raw_fair, "fairSharing")
        if not v1beta1 and "enable" in fair:
            raise TenancyError(
                f"{doc.where}: fairSharing.enable: not a field of {api} (fair sharing is on "
                "when fairSharing is present, off when absent)"
            )
        _keys(
            doc,
            fair,
            "fairSharing",
            {"enable", "preemptionStrategies"} if v1beta1 else {"preemptionStrategies"},
        )
        if v1beta1 and not self._enabled(doc, fair, "fairSharing"):
            return
        field = "fairSharing.preemptionStrategies"
        raw = _list(doc, fair.get("preemptionStrategies"), field)
        allowed = (LESS_THAN_OR_EQUAL_FINAL, LESS_THAN_INITIAL)
        # v1beta1 defaults an empty list to both strategies; v1beta2 requires one.
        strategies = (
            tuple(_choice(doc, s, field, allowed, allowed[0]) for s in raw)
            if raw or not v1beta1
            else FairSharing().strategies
        )
        if strategies not in _STRATEGY_LISTS:
            lists = ", ".join(str(list(x)) for x in _STRATEGY_LISTS)
            raise doc.fail(field, f"one of Kueue's lists {lists}", raw)
        self.fair = FairSharing(True, strategies)

    @staticmethod
    def _enabled(doc: _Doc, value: object, field: str) -> bool:
        """v1beta1's ``enable`` of the mapping at ``field``."""
        enabled = _mapping(doc, value, field).get("enable", False)
        if not isinstance(enabled, bool):
            raise doc.fail(f"{field}.enable", "true or false", enabled)
        return enabled

    def build(self, source: str) -> Tenancy:
        for cq in self.cqs.values():
            for group in cq.resource_groups:
                for fq in group.flavors:
                    if fq.flavor not in self.flavors:
                        raise TenancyError(
                            f"{self.where[('ClusterQueue', cq.name)]}: flavor {fq.flavor!r} has "
                            "no ResourceFlavor"
                        )
        cohorts = dict(self.cohorts)
        # A cohort named only by ClusterQueues exists implicitly, as in Kueue.
        for cq in self.cqs.values():
            if cq.cohort is not None and cq.cohort not in cohorts:
                cohorts[cq.cohort] = Cohort(cq.cohort)
        for co in list(cohorts.values()):
            if co.parent is not None and co.parent not in cohorts:
                cohorts[co.parent] = Cohort(co.parent)
        _check_no_cycle(source, cohorts)
        for lq in self.lqs.values():
            if lq.cluster_queue not in self.cqs:
                raise TenancyError(
                    f"{self.where[('LocalQueue', lq.ref)]}: spec.clusterQueue {lq.cluster_queue!r} "
                    "is not a ClusterQueue of these manifests"
                )
        if not self.cqs:
            raise TenancyError(f"{source}: no ClusterQueue (kind ClusterQueue, {KUEUE_GROUP})")
        return Tenancy(
            self.flavors,
            self.cqs,
            cohorts,
            self.lqs,
            self.pcs,
            self.fair,
            source,
            self.namespaces,
            KueueClock(pods_ready=self.pods_ready),
        )


def _check_no_cycle(source: str, cohorts: Mapping[str, Cohort]) -> None:
    """:class:`TenancyError` showing the cycle if cohorts' parents form one. Linear: each
    cohort's chain is walked once, stopping at a cohort already known to reach a root."""
    done: set[str] = set()
    for start in cohorts:
        chain: list[str] = []
        on_chain: set[str] = set()
        name: str | None = start
        while name is not None and name not in done:
            if name in on_chain:
                cycle = chain[chain.index(name) :]
                raise TenancyError(f"{source}: cohorts form a cycle: {' -> '.join([*cycle, name])}")
            chain.append(name)
            on_chain.add(name)
            name = cohorts[name].parent
        done.update(chain)


def load_yaml_documents(path: Path) -> list[object]:
    """Every document of a YAML file, read by :func:`dlsched.safe_load.load_yaml_documents`
    (no anchors or aliases, no duplicate keys, bounded size, nesting and numbers);
    :class:`TenancyError` naming the file and line otherwise."""
    require("queue manifests", "tenancy")
    try:
        return safe_load.load_yaml_documents(safe_load.read_text(path), str(path))
    except safe_load.InputError as exc:
        raise TenancyError(str(exc)) from None


def _bundled_dir() -> Path:
    return Path(__file__).resolve().parents[1] / "data" / "queues"


def bundled_manifest_names() -> tuple[str, ...]:
    """Names of the manifests shipped with dlsched (``src/dlsched/data/queues/NAME.yaml``)."""
    return tuple(sorted(p.stem for p in _bundled_dir().glob("*.yaml")))


def read_manifests(paths: str | Path | list[str | Path]) -> Tenancy:
    """The queue objects of one or more YAML files (a directory: its ``*.yaml``/``*.yml``
    files, in name order; a name that is no path: the bundled manifests of that name, e.g.
    ``philly-cohort``), validated."""
    items = paths if isinstance(paths, list) else [paths]
    files: list[Path] = []
    for item in items:
        p = Path(item)
        bundled = _bundled_dir() / f"{item}.yaml"
        if p.is_dir():
            files.extend(sorted([*p.glob("*.yaml"), *p.glob("*.yml")]))
        elif p.is_file():
            files.append(p)
        elif "/" not in str(item) and bundled.is_file():
            files.append(bundled)
        else:
            raise FileNotFoundError(
                f"queue manifests {p}: no such file or directory, nor bundled manifests of that "
                f"name (bundled: {', '.join(bundled_manifest_names())})"
            )
    builder = _Builder()
    for path in files:
        for index, data in enumerate(load_yaml_documents(path), start=1):
            if data is None:
                continue
            if not isinstance(data, Mapping):
                raise TenancyError(f"{path}: document {index}: expected a mapping, got {data!r}")
            builder.add(str(path), index, data)
    return builder.build(", ".join(str(f) for f in files))
