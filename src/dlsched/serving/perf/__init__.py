"""Serving performance models: the time of one model iteration (a prefill, a decode step, or
both at once) as a function of what the batch holds.

:class:`~dlsched.serving.perf.model.IterationModel` is what the replica simulator asks;
:mod:`.linear` fits one to measured points, :mod:`.roofline` derives one from the model's
shape and the GPU's peaks, :mod:`.evaluate` scores both on held-out measurements.
"""
