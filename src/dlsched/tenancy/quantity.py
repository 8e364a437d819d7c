"""Kubernetes resource quantities (``9``, ``500m``, ``36Gi``, ``1e3``) as numbers in dlsched's
units: GPUs and CPUs as counts, memory in MiB."""

from __future__ import annotations

import math
import re

from dlsched.safe_load import MAX_NUMBER_CHARS, shown
from dlsched.tenancy.errors import TenancyError

_SUFFIX = {
    "": 1.0,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
    "Ei": 2.0**60,
}
_QUANTITY = re.compile(
    r"^([+]?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"
)
MIB = 2.0**20
MAX_QUANTITY = 2.0**63
"""The largest quantity (memory in bytes), Kubernetes's own bound (a signed 64-bit value): a
quota of ``1e400`` or ``.inf`` is a mistake, refused when read instead of breaking the
arithmetic of shares at the end of a run."""


def parse_quantity(value: object, where: str) -> float:
    """The number a quantity stands for (memory in bytes); :class:`TenancyError` naming
    ``where`` when ``value`` is not a finite quantity in ``0..MAX_QUANTITY`` (NaN, infinities,
    ``1e400`` and literals longer than :data:`~dlsched.safe_load.MAX_NUMBER_CHARS` characters
    are refused)."""
    if isinstance(value, bool):
        raise TenancyError(f"{where}: expected a quantity such as 8, 500m or 36Gi, got {value!r}")
    if isinstance(value, int | float):
        amount = float(value) if abs(value) <= MAX_QUANTITY else math.inf
        text = repr(value) if amount != math.inf else shown(str(value))
    else:
        raw = str(value).strip()
        if len(raw) > MAX_NUMBER_CHARS:
            raise TenancyError(
                f"{where}: expected a quantity of at most {MAX_NUMBER_CHARS} characters, "
                f"got {shown(raw)}"
            )
        match = _QUANTITY.match(raw)
        if match is None:
            raise TenancyError(
                f"{where}: expected a quantity such as 8, 500m or 36Gi, got {shown(raw)}"
            )
        amount = float(match.group(1)) * _SUFFIX[match.group(2) or ""]
        text = repr(raw)
    if not math.isfinite(amount) or amount > MAX_QUANTITY:
        raise TenancyError(f"{where}: expected a finite quantity up to 2^63, got {text}")
    if amount < 0:
        raise TenancyError(f"{where}: expected a quantity >= 0, got {text}")
    return amount


def in_units(resource: str, amount: float) -> float:
    """``amount`` of ``resource`` in dlsched's unit: memory in MiB, everything else as is."""
    return amount / MIB if resource == "memory" else amount
