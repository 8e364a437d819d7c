"""One module per public trace format; :data:`CSV_FORMATS` maps ``--format`` names to them."""

from __future__ import annotations

from types import MappingProxyType

from dlsched.trace.readers.alibaba import ALIBABA_2023
from dlsched.trace.readers.canonical import CANONICAL
from dlsched.trace.readers.elasticflow import ELASTICFLOW
from dlsched.trace.readers.gavel import GAVEL_PHILLY
from dlsched.trace.readers.helios import HELIOS
from dlsched.trace.readers.philly import PHILLY
from dlsched.trace.readers.pollux import POLLUX
from dlsched.trace.readers.spec import CsvFormat

CSV_FORMATS = MappingProxyType(
    {
        f.name: f
        for f in (PHILLY, GAVEL_PHILLY, HELIOS, ALIBABA_2023, POLLUX, ELASTICFLOW, CANONICAL)
    }
)
FORMAT_NAMES: tuple[str, ...] = tuple(CSV_FORMATS)

__all__ = ["CSV_FORMATS", "FORMAT_NAMES", "CsvFormat"]
