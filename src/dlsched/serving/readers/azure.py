"""Azure LLM inference traces (Azure/AzurePublicDataset, CC-BY-4.0).

Columns ``TIMESTAMP, ContextTokens, GeneratedTokens``: the wall-clock arrival (UTC, a fraction
of a second of up to seven digits), the prompt and the generated tokens. The 2023 files (one
hour of a coding and a conversation service, the Splitwise workload; Patel et al., ISCA'24)
and the 2024 week-long files (DynamoLLM; Stojkovic et al., HPCA'25) share these columns. The
trace's origin is its earliest arrival; no model, tenant or class is given.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pyarrow as pa

from dlsched.serving.readers.values import shift_to_origin, tokens, wall_time
from dlsched.serving.requests import REQUEST_SCHEMA
from dlsched.trace.readers.fields import Row
from dlsched.trace.readers.spec import CsvFormat


class AzureParser:
    """Reads Azure LLM rows; arrival times are shifted to the earliest at the end."""

    def parse(self, row: Row) -> tuple[Any, ...]:
        return (
            wall_time("TIMESTAMP", row.text("TIMESTAMP")),
            tokens("ContextTokens", row.integer("ContextTokens")),
            tokens("GeneratedTokens", row.integer("GeneratedTokens")),
        )

    def finish(self, table: pa.Table) -> tuple[pa.Table, float | None]:
        return shift_to_origin(table)


AZURE_LLM = CsvFormat(
    name="azure-llm",
    source="Azure LLM inference trace (2023, 2024)",
    required=("TIMESTAMP", "ContextTokens", "GeneratedTokens"),
    optional=(),
    signature=frozenset({"ContextTokens", "GeneratedTokens"}),
    outputs=("arrival_time", "prompt_tokens", "output_tokens"),
    new_parser=AzureParser,
    closed=True,
    source_columns=MappingProxyType(
        {
            "arrival_time": "TIMESTAMP",
            "prompt_tokens": "ContextTokens",
            "output_tokens": "GeneratedTokens",
        }
    ),
    schema=REQUEST_SCHEMA,
)
