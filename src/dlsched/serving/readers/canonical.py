"""dlsched's own request CSV: a header naming request columns (see ``REQUEST_SCHEMA``).

``arrival_time`` (seconds from the trace's start), ``prompt_tokens`` and ``output_tokens`` are
required; ``model``, ``tenant`` and ``slo_class`` may be present. What
:func:`dlsched.serving.readers.read.write_requests_csv` writes.
"""

from __future__ import annotations

from typing import Any

from dlsched.serving.readers.values import seconds, tokens
from dlsched.serving.requests import REQUEST_COLUMNS, REQUEST_SCHEMA
from dlsched.trace.readers.fields import Row
from dlsched.trace.readers.spec import CsvFormat, RelativeTimes


class RequestsCsvParser(RelativeTimes):
    """Reads canonical request rows; absent optional columns read as null."""

    def parse(self, row: Row) -> tuple[Any, ...]:
        return (
            seconds("arrival_time", row.number("arrival_time")),
            tokens("prompt_tokens", row.integer("prompt_tokens")),
            tokens("output_tokens", row.integer("output_tokens")),
            row.opt_text("model"),
            row.opt_text("tenant"),
            row.opt_text("slo_class"),
        )


REQUESTS_CSV = CsvFormat(
    name="requests",
    source="dlsched request columns",
    required=REQUEST_COLUMNS[:3],
    optional=REQUEST_COLUMNS[3:],
    signature=frozenset({"arrival_time", "prompt_tokens"}),
    outputs=REQUEST_COLUMNS,
    new_parser=RequestsCsvParser,
    closed=True,
    schema=REQUEST_SCHEMA,
)
