"""Mooncake's request traces (Qin et al., "Mooncake: A KVCache-centric Disaggregated
Architecture for LLM Serving", FAST'25): JSON lines ``{"timestamp", "input_length",
"output_length", "hash_ids"}``.

``timestamp`` is milliseconds since the first request (equal values: simultaneous arrivals);
``hash_ids`` lists the hashes of the prompt's prefix blocks (for prefix-cache reuse, which
dlsched does not model: the list is checked to be integers and then not kept). A blank line
holds no request; any other line that is not such an object is a row error naming its line.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from dlsched.safe_load import MAX_LINE_CHARS, InputError, LongLine, load_json, read_line
from dlsched.serving.readers.values import seconds, tokens
from dlsched.serving.requests import REQUEST_SCHEMA
from dlsched.trace.errors import RowError, TraceError, reading
from dlsched.trace.readers.fields import BadField
from dlsched.trace.readers.records import WHOLE_ROW, columns_table

FIELDS = ("timestamp", "input_length", "output_length", "hash_ids")
OUTPUTS = ("arrival_time", "prompt_tokens", "output_tokens")


def parse_line(text: str) -> tuple[float, int, int]:
    """The request of one JSON line; BadField naming the field otherwise (NaN, infinities
    and numbers beyond :mod:`dlsched.safe_load`'s bounds included)."""
    try:
        record = load_json(text, "")
    except InputError as exc:
        raise BadField(exc.field or WHOLE_ROW, exc.expected) from None
    if not isinstance(record, dict):
        raise BadField(WHOLE_ROW, f"expected a JSON object, got {type(record).__name__}")
    unknown = sorted(set(record) - set(FIELDS))
    if unknown:
        raise BadField(unknown[0], f"unexpected field; a Mooncake request has {', '.join(FIELDS)}")
    stamp = _number(record, "timestamp")
    prompt = tokens("input_length", _integer(record, "input_length"))
    output = tokens("output_length", _integer(record, "output_length"))
    hashes = record.get("hash_ids", [])
    if not isinstance(hashes, list) or not all(
        isinstance(h, int) and not isinstance(h, bool) for h in hashes
    ):
        raise BadField("hash_ids", "expected a list of integers")
    return seconds("timestamp", stamp / 1000.0), prompt, output


def _number(record: dict[str, Any], field: str) -> float:
    value = record.get(field)
    if value is None:
        raise BadField(field, "missing value")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadField(field, f"not a number: {value!r}")
    # load_json has refused non-finite values and integers beyond 64 bits.
    return float(value)


def _integer(record: dict[str, Any], field: str) -> int:
    value = _number(record, field)
    if not value.is_integer():
        raise BadField(field, f"not an integer: {record[field]!r}")
    return int(value)


def read_mooncake(path: str) -> tuple[pa.Table, tuple[int, ...], int, tuple[RowError, ...]]:
    """The accepted rows of a Mooncake file (request schema, file order), their lines, the
    number of requests read and the rejected ones; TraceError for a file that cannot be read."""
    rows: list[tuple[Any, ...]] = []
    lines: list[int] = []
    errors: list[RowError] = []
    read = 0
    with reading(path), open(path, encoding="utf-8-sig") as handle:
        number = 0
        while text := read_line(handle):
            number += 1
            if isinstance(text, LongLine):
                read += 1
                errors.append(
                    RowError(
                        path,
                        number,
                        WHOLE_ROW,
                        f"a line of {text.chars:,} characters (the limit is {MAX_LINE_CHARS:,})",
                    )
                )
                continue
            if not text.strip():
                continue
            read += 1
            try:
                rows.append(parse_line(text))
            except BadField as exc:
                errors.append(RowError(path, number, exc.field, exc.reason))
                continue
            lines.append(number)
    if not read:
        raise TraceError(f"{path}: no request (an empty Mooncake file)")
    return columns_table(OUTPUTS, rows, REQUEST_SCHEMA), tuple(lines), read, tuple(errors)
