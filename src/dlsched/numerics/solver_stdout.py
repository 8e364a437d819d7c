"""Keeping what a solver library prints off a command's standard output."""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def solver_prints_to_stderr() -> Iterator[None]:
    """Send what the solver prints on the C-level standard output to standard error for the
    duration: some HiGHS versions print a debugging line (``HighsMipSolverData::
    transformNewIntegerFeasibleSolution``) when they repair a solution, which would corrupt a
    command's JSON or table on stdout. A no-op where stdout has no file descriptor."""
    try:
        out, err = sys.stdout.fileno(), sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        yield
        return
    sys.stdout.flush()
    saved = os.dup(out)
    os.dup2(err, out)
    try:
        yield
    finally:
        ctypes.CDLL(None).fflush(None)
        os.dup2(saved, out)
        os.close(saved)
