"""Hypothesis strategies shared by the tenancy tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

POLICY = {
    "reclaim": st.sampled_from(["Never", "LowerPriority", "Any"]),
    "within": st.sampled_from(["Never", "LowerPriority", "LowerOrNewerEqualPriority"]),
    "borrow_within": st.sampled_from([None, "LowerPriority"]),
    "strategy": st.sampled_from(["BestEffortFIFO", "StrictFIFO"]),
}


@st.composite
def policies(draw: st.DrawFn) -> dict[str, Any]:
    """A ClusterQueue's preemption and queueing policies, keyed as ``kueue_manifests`` takes
    them (unset ones left out; no ``borrow_within`` when it never reclaims)."""
    spec = {key: value for key, values in POLICY.items() if (value := draw(values)) is not None}
    if spec["reclaim"] == "Never":
        spec.pop("borrow_within", None)
    return spec
