"""BurstGPT (Wang et al., "BurstGPT: A Real-world Workload Dataset to Optimize LLM Serving
Systems", 2024): ChatGPT and GPT-4 requests to a campus Azure OpenAI service.

Columns ``Timestamp, Model, Request tokens, Response tokens, Total tokens, Log Type``:
seconds from the trace's start, the model named, prompt and response tokens, their sum
(checked), and whether the request came through the conversation UI or the API (kept as the
request's ``slo_class``). A response of 0 tokens (a failed request) is rejected: a served
request generates at least one token (``--skip-bad-rows`` drops such rows, counted).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from dlsched.serving.readers.values import seconds, tokens
from dlsched.serving.requests import REQUEST_SCHEMA
from dlsched.trace.readers.fields import BadField, Row
from dlsched.trace.readers.spec import CsvFormat, RelativeTimes


class BurstGptParser(RelativeTimes):
    """Reads BurstGPT rows (times already relative to the trace's start)."""

    def parse(self, row: Row) -> tuple[Any, ...]:
        arrival = seconds("Timestamp", row.number("Timestamp"))
        prompt = tokens("Request tokens", row.integer("Request tokens"), least=0)
        output = tokens("Response tokens", row.integer("Response tokens"))
        total = row.opt_integer("Total tokens")
        if total is not None and total != prompt + output:
            raise BadField(
                "Total tokens", f"{total} is not Request + Response tokens = {prompt + output}"
            )
        if prompt == 0:
            raise BadField("Request tokens", "0 tokens (a request has a prompt)")
        return arrival, prompt, output, row.opt_text("Model"), row.opt_text("Log Type")


BURSTGPT = CsvFormat(
    name="burstgpt",
    source="BurstGPT LLM request log",
    required=("Timestamp", "Request tokens", "Response tokens"),
    optional=("Model", "Total tokens", "Log Type"),
    signature=frozenset({"Request tokens", "Response tokens"}),
    outputs=("arrival_time", "prompt_tokens", "output_tokens", "model", "slo_class"),
    new_parser=BurstGptParser,
    closed=True,
    source_columns=MappingProxyType(
        {
            "arrival_time": "Timestamp",
            "prompt_tokens": "Request tokens",
            "output_tokens": "Response tokens",
            "model": "Model",
            "slo_class": "Log Type",
        }
    ),
    schema=REQUEST_SCHEMA,
)
