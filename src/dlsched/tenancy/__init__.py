"""Tenants sharing a cluster: Kueue-style queues and quotas as data, and the admission stage.

- :mod:`~dlsched.tenancy.model`: ResourceFlavor, ClusterQueue, Cohort, LocalQueue,
  WorkloadPriorityClass and fair-sharing settings, as immutable data;
- :mod:`~dlsched.tenancy.manifests`: reads them from Kueue's own multi-document YAML manifests;
- :mod:`~dlsched.tenancy.queue_map`: which LocalQueue and priority class a trace job goes to;
- :mod:`~dlsched.tenancy.quota`: the cohort tree's quota and usage (borrowing, lending);
- :mod:`~dlsched.tenancy.admission`: admission of workloads, with Kueue's classic and fair
  preemption;
- :mod:`~dlsched.tenancy.stage`: the admission stage the simulator composes in front of its
  ordering schedulers;
- :mod:`~dlsched.tenancy.report`: per-tenant figures of a run (JCT, queueing, slowdown, quota
  used/borrowed/lent, evictions by cause, fairness).

Importing this package is cheap: nothing is imported until a submodule is.
"""
