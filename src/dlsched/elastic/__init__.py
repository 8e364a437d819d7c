"""Round-based simulation of elastic, application-described jobs (Pollux workloads).

Jobs name an application of the bundled profiles and train for that application's epochs;
progress comes from :mod:`dlsched.perf` (measured step times, statistical efficiency). Each round
an :class:`~dlsched.elastic.policy.ElasticPolicy` returns, per job, which GPUs on which nodes it
holds and its batch configuration; the simulator validates the answer and advances every job.
"""
