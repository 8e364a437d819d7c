"""Experiment sweeps: grids of simulations run in parallel (process pool or Ray), resumable,
with one comparison table and figure set over seeds."""
