"""Parameter-server (PS) jobs: a layered model zoo, a per-iteration time model, the SMD
scheduler with its baselines, and a round-based simulator (see docs/smd.md)."""
