"""dlsched: scheduling deep-learning workloads in GPU datacenters.

Public API: traces in (:mod:`dlsched.trace`), clusters (:mod:`dlsched.cluster`), the event-driven
simulator (:func:`simulate`), policies and placers by name, and run directories.
"""

__version__ = "0.1.0"
