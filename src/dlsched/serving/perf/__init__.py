"""Serving performance models: the time of one model iteration (a prefill, a decode step, or
both at once) as a function of what the batch holds.

:class:`~dlsched.serving.perf.model.IterationModel` is what the replica simulator asks;
:mod:`.interpolated` follows a deployment's measurements (exact where measured, interpolated
between, fitted forms beyond: the ``fitted`` model), :mod:`.linear` fits one line per phase to
them, :mod:`.roofline` derives a model from the model's shape and the GPU's peaks for
deployments without measurements, :mod:`.evaluate` scores them on held-out measurements.
"""
