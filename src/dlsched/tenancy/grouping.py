"""Ordering rows by a small integer key (a queue or tree number) without losing time order."""

from __future__ import annotations

import numpy as np


def group_order(keys: np.ndarray, groups: int) -> np.ndarray:
    """The stable order of ``keys`` (integers in ``[0, groups)``): rows grouped by key, in
    their original order within a key. Keys that fit 16 bits are sorted by radix (linear
    time, the common case of at most 65,536 queues)."""
    if groups <= 1 << 16:
        keys = keys.astype(np.uint16)
    order: np.ndarray = np.argsort(keys, kind="stable")
    return order
