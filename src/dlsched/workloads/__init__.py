"""Real training workloads for the live service, and what their runs measure.

``python -m dlsched.workloads.train`` trains a small CNN on generated data under the job
contract of the live service: it reads its ``DLSCHED_*`` environment (:mod:`.jobenv`), writes
its status file (:mod:`.status`), logs the GPUs it holds (:mod:`.gpu_log`), checkpoints every
few steps and on SIGTERM (then exits 75) and resumes from its checkpoint. :mod:`.measure` turns
the status files of a finished live run into a throughput table the simulator can use (import
it from there: it is also a command, ``python -m dlsched.workloads.measure``).

Only the training itself needs PyTorch (the ``train`` extra); every module here except
``models``, ``data``, ``checkpoint`` and ``loop`` imports without it.
"""

from dlsched.workloads.jobenv import JobEnv
from dlsched.workloads.status import TrainStatus, read_status, write_status

__all__ = ["JobEnv", "TrainStatus", "read_status", "write_status"]
