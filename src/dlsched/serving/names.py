"""The names a serving run is configured by — routers and performance models — apart from their
implementations, so a command's help lists them without importing the simulator.
"""

from __future__ import annotations

STATELESS_ROUTERS = ("round-robin", "random")
"""Routers that assign every request up front, from its index and the seed."""
STATE_ROUTERS = ("least-outstanding-tokens", "kv-aware")
"""Routers that read the replicas' state as requests arrive."""
ROUTERS = (*STATELESS_ROUTERS, *STATE_ROUTERS)
PERF_MODELS = ("fitted", "roofline")
"""``fitted``: the linear model fitted to the deployment's measurements (refused when it has
none); ``roofline``: the analytic bound over efficiencies fitted to every measurement."""
