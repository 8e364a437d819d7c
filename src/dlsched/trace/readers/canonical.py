"""dlsched's own CSV form: a header naming canonical columns (see ``schema.SCHEMA``).

``job_id``, ``submit_time`` and ``num_gpus`` are required; any other canonical column may be
present, in any order, and an empty field is null. Values are read by the column's Arrow type
(string, float64, integer, or yes/no: ``true``/``1``, ``false``/``0``) and must use the
canonical units and state names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from dlsched.trace.readers.fields import Row
from dlsched.trace.readers.spec import CsvFormat, RelativeTimes
from dlsched.trace.schema import COLUMN_NAMES, SCHEMA

REQUIRED = ("job_id", "submit_time", "num_gpus")


def _reader_for(name: str) -> Callable[[Row, str], Any]:
    """The ``Row`` method that reads column ``name`` by its Arrow type."""
    kind = SCHEMA.field(name).type
    required = name in REQUIRED
    if pa.types.is_string(kind):
        return Row.text if required else Row.opt_text
    if pa.types.is_floating(kind):
        return Row.number if required else Row.opt_number
    if pa.types.is_boolean(kind):
        return Row.opt_flag
    bits = kind.bit_width
    if required:
        return lambda row, column: row.integer(column, bits)
    return lambda row, column: row.opt_integer(column, bits)


_READERS = tuple((name, _reader_for(name)) for name in COLUMN_NAMES)


class CanonicalParser(RelativeTimes):
    """Reads canonical rows; absent columns read as null."""

    def parse(self, row: Row) -> tuple[Any, ...]:
        return tuple(read(row, name) for name, read in _READERS)


CANONICAL = CsvFormat(
    name="canonical",
    source="dlsched canonical columns",
    required=REQUIRED,
    optional=tuple(name for name in COLUMN_NAMES if name not in REQUIRED),
    signature=frozenset({"job_id"}),
    outputs=COLUMN_NAMES,
    new_parser=CanonicalParser,
    closed=True,
)
