"""Whether a workload's pods may use a flavor, as Kueue's flavor assigner checks it
(``checkFlavorForPodSets``): each pod set must tolerate the flavor's ``NoSchedule`` and
``NoExecute`` taints (with the flavor's own tolerations, which Kueue adds to its pods), and its
node selector and required node affinity must match the flavor's node labels, looking only at
the label keys the flavor has (a selector key the flavor lacks is ignored; an affinity term
left with no expression makes the whole affinity ignored, as Kueue does).

Affinity terms are ORed, a term's expressions ANDed; operators ``In``, ``NotIn``, ``Exists``,
``DoesNotExist``, ``Gt``, ``Lt`` (Kubernetes' node-selector operators).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dlsched.tenancy.model import ResourceFlavor, Taint, Toleration

HARD_EFFECTS = ("NoSchedule", "NoExecute")
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")

Expression = tuple[str, str, tuple[str, ...]]
"""A node-selector requirement: (key, operator, values)."""


@dataclass(frozen=True)
class PodConstraints:
    """What one pod set asks of the nodes a flavor stands for."""

    node_selector: tuple[tuple[str, str], ...] = ()
    affinity: tuple[tuple[Expression, ...], ...] = ()
    tolerations: tuple[Toleration, ...] = ()


def _tolerated(taint: Taint, tolerations: Sequence[Toleration]) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


def _matches(expression: Expression, labels: Mapping[str, str]) -> bool:
    key, operator, values = expression
    value = labels.get(key)
    if operator == "In":
        return value in values
    if operator == "NotIn":
        return value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if value is None or not values:
        return False
    try:
        have, bound = int(value), int(values[0])
    except ValueError:
        return False
    return have > bound if operator == "Gt" else have < bound


def pods_fit(flavor: ResourceFlavor, pods: Sequence[PodConstraints]) -> bool:
    """Whether every pod set of ``pods`` may use ``flavor`` (module docstring). Pods that ask
    nothing fit any flavor without hard taints."""
    labels = flavor.node_labels
    hard = [t for t in flavor.node_taints if t.effect in HARD_EFFECTS]
    for pod in pods or (PodConstraints(),):
        tolerations = (*pod.tolerations, *flavor.tolerations)
        if any(not _tolerated(t, tolerations) for t in hard):
            return False
        if any(k in labels and labels[k] != v for k, v in pod.node_selector):
            return False
        terms: list[tuple[Expression, ...]] = []
        for term in pod.affinity:
            kept = tuple(e for e in term if e[0] in labels)
            if not kept:
                terms = []
                break
            terms.append(kept)
        if terms and not any(all(_matches(e, labels) for e in term) for term in terms):
            return False
    return True
