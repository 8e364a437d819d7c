"""The names a serving run is configured by — routers and performance models — apart from their
implementations, so a command's help lists them without importing the simulator.
"""

from __future__ import annotations

STATELESS_ROUTERS = ("round-robin", "random")
"""Routers that assign every request up front, from its index and the seed."""
STATE_ROUTERS = ("least-outstanding-tokens", "kv-aware")
"""Routers that read the replicas' state as requests arrive."""
ROUTERS = (*STATELESS_ROUTERS, *STATE_ROUTERS)
PERF_MODELS = ("fitted", "roofline", "linear")
"""``fitted``: the deployment's measurements, interpolated between measured points and a fitted
form beyond them (refused when it has none); ``roofline``: the analytic bound over efficiencies
fitted to every measurement (for deployments without measurements); ``linear``: one straight
line per phase fitted to the deployment's measurements (the model before, for comparison)."""
