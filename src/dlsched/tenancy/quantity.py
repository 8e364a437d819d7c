"""Kubernetes resource quantities (``9``, ``500m``, ``36Gi``, ``1e3``) as numbers in dlsched's
units: GPUs and CPUs as counts, memory in MiB."""

from __future__ import annotations

import re

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


def parse_quantity(value: object, where: str) -> float:
    """The number a quantity stands for (memory in bytes); :class:`TenancyError` naming
    ``where`` when ``value`` is not a non-negative quantity."""
    if isinstance(value, bool):
        raise TenancyError(f"{where}: expected a quantity such as 8, 500m or 36Gi, got {value!r}")
    if isinstance(value, int | float):
        if value < 0 or value != value:
            raise TenancyError(f"{where}: expected a quantity >= 0, got {value!r}")
        return float(value)
    match = _QUANTITY.match(str(value).strip())
    if match is None:
        raise TenancyError(f"{where}: expected a quantity such as 8, 500m or 36Gi, got {value!r}")
    return float(match.group(1)) * _SUFFIX[match.group(2) or ""]


def in_units(resource: str, amount: float) -> float:
    """``amount`` of ``resource`` in dlsched's unit: memory in MiB, everything else as is."""
    return amount / MIB if resource == "memory" else amount
