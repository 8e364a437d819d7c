"""Running one Kueue conformance case (tests/data/kueue/conformance/FORMAT.md) through
dlsched: its objects become Kueue manifests read by :func:`read_manifests`, its admitted
workloads are set up with :meth:`Admission.admit_with`, and the incoming workload's targets
come from :meth:`Admission.preemption_targets`. A case dlsched cannot express is refused
with the reason, never run half-way."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dlsched.tenancy.admission import Admission, Workload
from dlsched.tenancy.cycle import KueueQueues
from dlsched.tenancy.errors import TenancyError
from dlsched.tenancy.flavor_assignment import (
    BEST,
    FITS,
    NO_CANDIDATES,
    PREEMPTING,
    RECLAIMING,
    Granular,
    Oracle,
    preferred,
)
from dlsched.tenancy.manifests import read_manifests
from dlsched.tenancy.model import Toleration, resource_kind
from dlsched.tenancy.node_match import PodConstraints
from dlsched.tenancy.quantity import in_units, parse_quantity

CASES_DIR = Path(__file__).parents[1] / "data" / "kueue" / "conformance"
API = "kueue.x-k8s.io/v1beta1"
NOW = 1000.0
MODELLED_FEATURES: frozenset[str] = frozenset()
"""Feature gates a case may turn on and still run (none yet: each changes what Kueue does)."""
GATES_WITHOUT_EFFECT = {
    "WorkloadRequestUseMergePatch": "how Kueue writes the Workload object, not what it decides",
    "UnadmittedWorkloadsObservability": "which conditions and events Kueue writes for a "
    "workload it did not admit, not what it decides (TestSchedule runs every case both ways)",
}
PARTIAL_ADMISSION = "PartialAdmission"
"""A gate that changes a decision only for a workload with a pod set's ``minCount`` (Kueue
tries fewer pods, scheduler.go getInitialAssignments, ``CanBePartiallyAdmitted``); on by
default at the cited commit (Beta since 0.5). A case that sets it with no ``minCount`` runs."""


class Refused(Exception):
    """A case that needs what dlsched does not model; the message says what."""


@dataclass(frozen=True)
class Case:
    """One case of one file."""

    file: str
    source: Mapping[str, Any]
    kind: str
    fair_sharing: Mapping[str, Any] | None
    objects: Mapping[str, Any]
    data: Mapping[str, Any]

    @property
    def name(self) -> str:
        return str(self.data["case"])

    @property
    def id(self) -> str:
        return f"{Path(self.file).stem}::{self.name}"


def load_cases() -> list[Case]:
    """Every case of every file, in file order."""
    cases: list[Case] = []
    for path in sorted(CASES_DIR.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        for data in doc["cases"]:
            named = data.get("objects")
            objects = doc.get("objects", {}).get(named, {}) if isinstance(named, str) else {}
            inline = {k: data[k] for k in ("flavors", "clusterQueues", "cohorts") if k in data}
            # An assignment case names its queue and a second one of its cohort.
            queues = [data.get("clusterQueue"), data.get("secondaryClusterQueue")]
            if any(queues):
                inline["clusterQueues"] = [q for q in queues if q]
            fair = data.get("fairSharing", doc.get("fairSharing"))
            if isinstance(fair, bool):
                # An assignment case says only whether fair sharing is on.
                fair = {} if fair else None
            cases.append(
                Case(
                    path.name,
                    {**doc["source"], **({"test": data["test"]} if data.get("test") else {})},
                    doc["kind"],
                    fair,
                    {**objects, **inline},
                    data,
                )
            )
    return cases


def _spec(entry: Mapping[str, Any], drop: tuple[str, ...]) -> dict[str, Any]:
    """The entry as a Kueue object's spec: empty resource groups (a builder call with no
    resources, which Kueue ignores) left out."""
    spec = {k: v for k, v in entry.items() if k not in drop}
    groups = [
        g
        for g in spec.get("resourceGroups") or []
        if any(f.get("resources") for f in g.get("flavors", []))
    ]
    if groups:
        spec["resourceGroups"] = groups
    else:
        spec.pop("resourceGroups", None)
    return spec


def manifests(case: Case) -> list[dict[str, Any]]:
    """The case's objects as Kueue manifests (one LocalQueue per ClusterQueue)."""
    objects = case.objects
    docs: list[dict[str, Any]] = []
    for flavor in objects.get("flavors", []):
        entry = {"name": flavor} if isinstance(flavor, str) else flavor
        doc: dict[str, Any] = {
            "apiVersion": API,
            "kind": "ResourceFlavor",
            "metadata": {"name": entry["name"]},
        }
        spec = {k: v for k, v in entry.items() if k != "name" and v}
        if spec:
            doc["spec"] = spec
        docs.append(doc)
    named = {c["name"] for c in objects.get("cohorts", [])}
    for cohort in objects.get("cohorts", []):
        docs.append(
            {
                "apiVersion": API,
                "kind": "Cohort",
                "metadata": {"name": cohort["name"]},
                "spec": _spec(cohort, ("name",)),
            }
        )
    # A parent named only as a parent is a cohort with no quota of its own.
    for cohort in objects.get("cohorts", []):
        parent = cohort.get("parentName")
        if parent and parent not in named:
            named.add(parent)
            docs.append(
                {"apiVersion": API, "kind": "Cohort", "metadata": {"name": parent}, "spec": {}}
            )
    for cq in objects.get("clusterQueues", []):
        spec = _spec(cq, ("name",))
        spec.setdefault("namespaceSelector", {})
        docs.append(
            {
                "apiVersion": API,
                "kind": "ClusterQueue",
                "metadata": {"name": cq["name"]},
                "spec": spec,
            }
        )
        docs.append(
            {
                "apiVersion": API,
                "kind": "LocalQueue",
                "metadata": {"name": cq["name"], "namespace": f"ns-{cq['name']}"},
                "spec": {"clusterQueue": cq["name"]},
            }
        )
    if case.fair_sharing is not None:
        config: dict[str, Any] = {"enable": True}
        if case.fair_sharing.get("preemptionStrategies"):
            config["preemptionStrategies"] = list(case.fair_sharing["preemptionStrategies"])
        docs.append(
            {
                "apiVersion": "config.kueue.x-k8s.io/v1beta1",
                "kind": "Configuration",
                "fairSharing": config,
            }
        )
    return docs


def _kind(resource: str) -> str:
    kind = resource_kind(resource)
    if kind is None:
        raise Refused(
            f"resource {resource!r}: dlsched's workloads ask only GPUs, CPUs, memory, pods"
        )
    return kind


def _requests(
    spec: Mapping[str, Any], pods: bool = False
) -> tuple[dict[str, float], dict[str, str]]:
    """A workload's total requests by kind and its flavor per kind; with ``pods``, its pods
    too (Kueue counts them where the queue has quota for pods)."""
    total: dict[str, float] = {}
    if pods:
        total["pods"] = float(sum(int(ps.get("count", 1)) for ps in spec.get("podSets", [])))
    flavors: dict[str, str] = {}
    for ps in spec.get("podSets", []):
        count = int(ps.get("count", 1))
        # The admission's recorded usage, when given, is what Kueue charges.
        charged = ps.get("assigned")
        per_pod = charged is None
        for resource, quantity in (charged or ps.get("requests") or {}).items():
            kind = _kind(resource)
            amount = in_units(kind, parse_quantity(quantity, resource)) * (count if per_pod else 1)
            total[kind] = total.get(kind, 0.0) + amount
        for resource, flavor in (ps.get("flavors") or {}).items():
            kind = _kind(resource)
            if flavors.setdefault(kind, flavor) != flavor:
                raise Refused(
                    f"{spec['name']}: pod sets take {resource} from different flavors "
                    "(a dlsched workload holds each resource in one flavor)"
                )
    return total, flavors


def _assignment(case: Case) -> dict[str, tuple[str, bool]]:
    out: dict[str, tuple[str, bool]] = {}
    for ps in case.data["assignment"]:
        for resource, given in ps.items():
            kind = _kind(resource)
            entry = (str(given["flavor"]), given["mode"] == "Preempt")
            if out.setdefault(kind, entry) != entry:
                raise Refused(
                    f"the assignment gives {resource} different flavors or modes in two pod "
                    "sets (a dlsched workload holds each resource in one flavor)"
                )
    return out


def check_supported(case: Case) -> None:
    data = case.data
    if data.get("untranslated"):
        raise Refused(f"not modelled: {data['untranslated']}")
    features = data.get("features") or {}
    if features.get(PARTIAL_ADMISSION, True) and _has_min_count(data):
        raise Refused(
            "partial admission (PartialAdmission with a pod set's minCount: Kueue admits fewer "
            "pods when all do not fit) is not modelled"
        )
    for gate, on in features.items():
        if gate in GATES_WITHOUT_EFFECT or gate == PARTIAL_ADMISSION:
            continue
        if on and gate not in MODELLED_FEATURES:
            raise Refused(f"feature gate {gate} is not modelled")


def _has_min_count(data: object) -> bool:
    """Whether any pod set under ``data`` sets ``minCount``."""
    if isinstance(data, Mapping):
        return "minCount" in data or any(_has_min_count(v) for v in data.values())
    if isinstance(data, list):
        return any(_has_min_count(v) for v in data)
    return False


def sequence(specs: list[Mapping[str, Any]]) -> dict[str, int]:
    """A ``seq`` per workload name such that dlsched's last tie-break (most recently created,
    by ``seq`` descending) is Kueue's (UID ascending)."""
    ranked = sorted(range(len(specs)), key=lambda i: (str(specs[i].get("uid") or ""), i))
    return {str(specs[i]["name"]): len(specs) - r for r, i in enumerate(ranked)}


def created(spec: Mapping[str, Any]) -> float:
    # Unset creation times are Go's zero time, before every set one.
    return 0.0 if spec.get("created") is None else NOW + float(spec["created"])


def _admission(case: Case, where: Path) -> Admission:
    """An Admission of the case's objects, read as manifests (refused as the reader refuses)."""
    path = where / "queues.yaml"
    path.write_text(yaml.safe_dump_all(manifests(case), sort_keys=False))
    try:
        tenancy = read_manifests(path)
    except TenancyError as err:
        raise Refused(f"manifests refused: {str(err).replace(str(path), path.name)}") from err
    return Admission(tenancy)


def setup(case: Case, where: Path) -> tuple[Admission, dict[str, Workload]]:
    """The case's Admission with its admitted workloads (reservation order kept)."""
    check_supported(case)
    adm = _admission(case, where)
    admitted = list(case.data.get("admitted") or [])
    seq = sequence(admitted)
    workloads: dict[str, Workload] = {}
    order = sorted(
        range(len(admitted)), key=lambda i: (float(admitted[i].get("reservedAt") or 0), i)
    )
    for i in order:
        spec = admitted[i]
        requests, flavors = _requests(spec)
        wl = Workload(
            spec["name"],
            adm.quota.index[spec["queue"]],
            int(spec.get("priority") or 0),
            created(spec),
            seq[spec["name"]],
            requests,
            evicting=bool(spec.get("evicted")),
        )
        try:
            adm.admit_with(wl, flavors, NOW + float(spec.get("reservedAt") or 0))
        except ValueError as err:
            raise Refused(f"{spec['name']}: {err}") from err
        workloads[spec["name"]] = wl
    return adm, workloads


def run_preemption(case: Case, where: Path) -> dict[str, str]:
    """The workloads the incoming workload preempts, each with its reason."""
    adm, _ = setup(case, where)
    spec = case.data["incoming"]
    requests, _ = _requests(spec)
    wl = Workload(
        spec["name"],
        adm.quota.index[case.data["target"]],
        int(spec.get("priority") or 0),
        created(spec),
        10**6,
        requests,
    )
    try:
        evictions = adm.preemption_targets(wl, _assignment(case))
    except ValueError as err:
        raise Refused(f"incoming: {err}") from err
    return {str(e.workload.key): e.reason for e in evictions}


def by_file(results: Iterator[tuple[Case, str]]) -> dict[tuple[str, str], dict[str, int]]:
    """(Kueue file, test) -> counts of cases, passed and refused, from (case, outcome)."""
    table: dict[tuple[str, str], dict[str, int]] = {}
    for case, outcome in results:
        key = (str(case.source["file"]), str(case.source["test"]))
        row = table.setdefault(key, {"cases": 0, "passed": 0, "refused": 0})
        row["cases"] += 1
        row[outcome] += 1
    return table


def markdown_table(table: Mapping[tuple[str, str], Mapping[str, int]]) -> str:
    """The pass table of :func:`by_file` as Markdown rows, with a total."""
    lines = [
        "| Kueue test file | test function | cases | pass | refused |",
        "|---|---|---|---|---|",
    ]
    total = {"cases": 0, "passed": 0, "refused": 0}
    for (file, test), row in table.items():
        lines.append(
            f"| `{file}` | `{test}` | {row['cases']} | {row['passed']} | {row['refused']} |"
        )
        for key in total:
            total[key] += row[key]
    lines.append(f"| all | | {total['cases']} | {total['passed']} | {total['refused']} |")
    return "\n".join(lines)


def markdown_refusals(refused: Mapping[str, str]) -> str:
    """Each refused case and why, as a Markdown list."""
    return "\n".join(f"- `{case}`: {why}" for case, why in sorted(refused.items()))


def generated_block(text: str, name: str) -> str:
    """The text between ``<!-- name -->`` and ``<!-- /name -->`` in ``text``."""
    start, end = f"<!-- {name} -->\n", f"\n<!-- /{name} -->"
    return text[text.index(start) + len(start) : text.index(end)]


def replace_block(text: str, name: str, content: str) -> str:
    """``text`` with the block :func:`generated_block` reads replaced by ``content``."""
    start, end = f"<!-- {name} -->\n", f"\n<!-- /{name} -->"
    return text[: text.index(start) + len(start)] + content + text[text.index(end) :]


def _usage(adm: Admission, queue: str, usage: Mapping[str, Any], tag: str) -> None:
    """Charge ``usage`` (``flavor/resource`` -> quantity) to ``queue`` as admitted workloads."""
    for i, (key, quantity) in enumerate((usage or {}).items()):
        flavor, resource = key.split("/", 1)
        kind = _kind(resource)
        amount = in_units(kind, parse_quantity(quantity, key))
        if amount <= 0:
            continue
        wl = Workload(f"{tag}-{i}", adm.quota.index[queue], 0, 0.0, -(i + 1), {kind: amount})
        try:
            adm.admit_with(wl, {kind: flavor}, NOW)
        except ValueError as err:
            raise Refused(f"usage {key}: {err}") from err


POSSIBILITIES = {"NoCandidates": NO_CANDIDATES, "Preempt": PREEMPTING, "Reclaim": RECLAIMING}


def _stub_oracle(adm: Admission, simulation: Mapping[str, Any]) -> Oracle:
    """The Go test's oracle: the case's answer for a flavor-resource, else Preempt with
    borrowing 0."""
    answers = {}
    for key, given in simulation.items():
        flavor, resource = key.split("/", 1)
        fr = adm.quota.frs[(flavor, resource)]
        answers[fr] = Granular(POSSIBILITIES[given["possibility"]], int(given["borrowing"]))
    return lambda fr, _: answers.get(fr, Granular(PREEMPTING, 0))


MODES = {FITS: "Fit", RECLAIMING: "Preempt", PREEMPTING: "Preempt", NO_CANDIDATES: "Preempt"}


def run_assignment(case: Case, where: Path) -> tuple[str, bool, dict[str, tuple[str, str]]]:
    """(Representative mode, whether it borrows, resource kind -> (flavor, mode)) of the
    case's workload in its queue."""
    check_supported(case)
    data = case.data
    spec = data["workload"]
    if spec.get("reclaimablePods"):
        raise Refused("reclaimable pods are not modelled")
    adm = _admission(case, where)
    queue = data["clusterQueue"]["name"]
    _usage(adm, queue, data.get("usage") or {}, "usage")
    if data.get("secondaryClusterQueue"):
        _usage(
            adm, data["secondaryClusterQueue"]["name"], data.get("secondaryUsage") or {}, "other"
        )
    requests, _ = _requests({"name": "workload", **spec}, pods=True)
    wl = Workload(
        "workload", adm.quota.index[queue], int(spec.get("priority") or 0), NOW, 10**6, requests
    )
    wl.pods = pod_constraints(spec)
    # A resource no group covers, or more than the queue could ever get: no flavor fits.
    if adm.never_admitted(wl) is not None:
        return "NoFit", False, {}
    choices = adm.assign_flavors(wl, _stub_oracle(adm, data.get("simulation") or {}))
    if any(c is None for c in choices):
        return "NoFit", False, {}
    chosen = [c for c in choices if c is not None]
    worst = BEST
    for c in chosen:
        if preferred(worst, c.mode):
            worst = c.mode
    kinds: dict[str, tuple[str, str]] = {}
    names = {fr: name for (flavor, name), fr in adm.quota.frs.items()}
    for c in chosen:
        for fr, _, mode in c.resources:
            kinds[_kind(names[fr])] = (c.flavor, MODES.get(mode.mode, "NoFit"))
    return MODES[worst.mode], any(c.mode.borrowing > 0 for c in chosen), kinds


def pod_constraints(spec: Mapping[str, Any]) -> tuple[PodConstraints, ...]:
    """Each pod set's node selector, required node affinity and tolerations, when any set
    one (else none: pods that ask nothing)."""
    out = []
    for ps in spec.get("podSets", []):
        terms = tuple(
            tuple(
                (str(e["key"]), str(e["operator"]), tuple(str(v) for v in e.get("values") or ()))
                for e in term.get("matchExpressions") or ()
            )
            for term in ps.get("affinity") or ()
        )
        tolerations = tuple(
            Toleration(
                str(t.get("key") or ""),
                str(t.get("operator") or "Equal"),
                str(t.get("value") or ""),
                str(t.get("effect") or ""),
            )
            for t in ps.get("tolerations") or ()
        )
        selector = tuple((str(k), str(v)) for k, v in (ps.get("nodeSelector") or {}).items())
        out.append(PodConstraints(selector, terms, tolerations))
    return tuple(out) if any(p != PodConstraints() for p in out) else ()


@dataclass(frozen=True)
class ScheduleOutcome:
    """What one scheduling cycle leaves (FORMAT.md, ``kind: schedule``): every admitted
    workload's ClusterQueue and flavor per resource kind, each ClusterQueue's workloads left
    active and inadmissible (sorted, empty queues left out), the workloads preempted with
    Kueue's reason."""

    assignments: dict[str, tuple[str, dict[str, str]]]
    left: dict[str, list[str]]
    inadmissible: dict[str, list[str]]
    preempted: dict[str, str]


def _schedule_manifests(case: Case) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The case's objects as manifests, and the LocalQueues (``namespace/name``) left out
    with why: Kueue keeps a LocalQueue of a missing ClusterQueue, and a ClusterQueue whose
    flavor has no ResourceFlavor, inactive; dlsched's reader refuses both."""
    data = case.data
    cqs = [*case.objects.get("clusterQueues", []), *(data.get("additionalClusterQueues") or [])]
    lqs = [*case.objects.get("localQueues", []), *(data.get("additionalLocalQueues") or [])]
    inactive = {str(cq["name"]): str(cq["inactive"]) for cq in cqs if cq.get("inactive")}
    active = [
        {k: v for k, v in cq.items() if k != "inactive"} for cq in cqs if cq.get("inactive") is None
    ]
    names = {str(cq["name"]) for cq in active}
    objects = {
        "flavors": case.objects.get("flavors", []),
        "clusterQueues": active,
        "cohorts": data.get("cohorts") or [],
    }
    plain = Case(case.file, case.source, case.kind, case.fair_sharing, objects, data)
    docs = [d for d in manifests(plain) if d["kind"] != "LocalQueue"]
    left_out: dict[str, str] = {}
    for lq in lqs:
        ref, cq = f"{lq['namespace']}/{lq['name']}", str(lq["clusterQueue"])
        if lq.get("inactive") or cq not in names:
            why = lq.get("inactive") or (
                f"its ClusterQueue {cq} is inactive: {inactive[cq]}"
                if cq in inactive
                else f"no ClusterQueue {cq}"
            )
            left_out[ref] = str(why)
            continue
        spec: dict[str, Any] = {"clusterQueue": cq}
        if lq.get("stopPolicy"):
            spec["stopPolicy"] = lq["stopPolicy"]
        docs.append(
            {
                "apiVersion": API,
                "kind": "LocalQueue",
                "metadata": {"name": lq["name"], "namespace": lq["namespace"]},
                "spec": spec,
            }
        )
    for ns in case.objects.get("namespaces", []):
        meta: dict[str, Any] = {"name": ns["name"]}
        if ns.get("labels"):
            meta["labels"] = dict(ns["labels"])
        docs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": meta})
    if data.get("enableFairSharing"):
        docs.append(
            {
                "apiVersion": "config.kueue.x-k8s.io/v1beta1",
                "kind": "Configuration",
                "fairSharing": {"enable": True},
            }
        )
    return docs, left_out


def _charged(spec: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, str]]:
    """An admitted workload's usage by kind (its admission's, which Kueue charges) and its
    flavor per kind."""
    pod_sets = []
    for ps in spec["admission"]["podSets"]:
        pod_sets.append({"count": 1, "assigned": ps.get("usage") or {}, "flavors": ps["flavors"]})
    return _requests({"name": spec["name"], "podSets": pod_sets})


def _kinds_of(adm: Admission, wl: Workload) -> dict[str, str]:
    """An admitted workload's flavor per resource kind."""
    names = adm.quota.fr_names
    return {_kind(names[fr][1]): names[fr][0] for fr in wl.assignment or {}}


def run_schedule(case: Case, where: Path) -> ScheduleOutcome:
    """Set up the case's admitted workloads, submit its pending ones (each with its
    namespace), run one :meth:`KueueQueues.cycle` and report what it left."""
    check_supported(case)
    docs, left_out = _schedule_manifests(case)
    path = where / "queues.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    try:
        tenancy = read_manifests(path)
    except TenancyError as err:
        raise Refused(f"manifests refused: {str(err).replace(str(path), path.name)}") from err
    adm = Admission(tenancy)
    specs = list(case.data.get("workloads") or [])
    seq = sequence(specs)
    admitted = [s for s in specs if s.get("admission")]
    pending = [s for s in specs if not s.get("admission") and s.get("queue")]
    for spec in sorted(admitted, key=lambda s: float(s.get("reservedAt") or 0)):
        requests, flavors = _charged(spec)
        cq = str(spec["admission"]["clusterQueue"])
        if cq not in adm.quota.index:
            raise Refused(f"{spec['name']}: admitted in ClusterQueue {cq}, which is not modelled")
        wl = Workload(
            f"{spec['namespace']}/{spec['name']}",
            adm.quota.index[cq],
            int(spec.get("priority") or 0),
            created(spec),
            seq[spec["name"]],
            requests,
            evicting=bool(spec.get("evicted")),
        )
        try:
            adm.admit_with(wl, flavors, NOW + float(spec.get("reservedAt") or 0))
        except ValueError as err:
            raise Refused(f"{spec['name']}: {err}") from err
    queues = KueueQueues(adm)
    for spec in pending:
        ref = f"{spec['namespace']}/{spec['queue']}"
        if ref in left_out:
            raise Refused(
                f"{spec['name']}: LocalQueue {ref} is inactive in Kueue ({left_out[ref]}); "
                "dlsched's reader refuses such manifests"
            )
        lq = tenancy.local_queues.get(ref)
        if lq is None:
            raise Refused(
                f"{spec['name']}: no LocalQueue {ref}; dlsched refuses a job naming a LocalQueue "
                "that does not exist (Kueue leaves its workload in no queue)"
            )
        requests, _ = _requests(spec, pods=True)
        wl = Workload(
            f"{spec['namespace']}/{spec['name']}",
            adm.quota.index[lq.cluster_queue],
            int(spec.get("priority") or 0),
            created(spec),
            seq[spec["name"]],
            requests,
        )
        queues.submit(wl, NOW, namespace=str(spec["namespace"]))
    result = queues.cycle(NOW)
    names = adm.quota.cq_names
    assignments = {
        str(wl.key): (names[cq], _kinds_of(adm, wl))
        for cq, workloads in enumerate(adm.admitted)
        for wl in workloads
    }

    def dump(listing: Any) -> dict[str, list[str]]:
        out = {}
        for cq, name in enumerate(names):
            keys = sorted(str(w.key) for w in listing(cq))
            if keys:
                out[name] = keys
        return out

    preempted = {str(e.workload.key): e.reason for _, evs in result.preempting for e in evs}
    return ScheduleOutcome(assignments, dump(queues.active), dump(queues.inadmissible), preempted)
