"""The tenant figures of a run's summary, by name: null for a run without queues.

Light on purpose: every run's summary names them, and a run without queues must not import the
tenancy package for four nulls.
"""

from __future__ import annotations

from typing import Any

TENANT_KEYS = (
    "tenants",
    "preemptions_by_cause",
    "tenant_fairness_jain",
    "tenant_fair_share_max_deviation",
)


def no_tenants() -> dict[str, Any]:
    """The tenant figures of a run without queues: all null."""
    return dict.fromkeys(TENANT_KEYS)
