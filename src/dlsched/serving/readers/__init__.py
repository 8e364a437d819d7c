"""Readers of public LLM request-trace formats into :class:`~dlsched.serving.requests.RequestTrace`.

:data:`REQUEST_CSV_FORMATS` maps ``--format`` names of the CSV formats to their declarations;
Mooncake's JSON-lines traces have their own reader (:mod:`.mooncake`). :func:`read_requests`
(:mod:`.read`) reads any of them.
"""

from __future__ import annotations

from types import MappingProxyType

from dlsched.serving.readers.azure import AZURE_LLM
from dlsched.serving.readers.burstgpt import BURSTGPT
from dlsched.serving.readers.canonical import REQUESTS_CSV
from dlsched.trace.readers.spec import CsvFormat

REQUEST_CSV_FORMATS: MappingProxyType[str, CsvFormat] = MappingProxyType(
    {f.name: f for f in (AZURE_LLM, BURSTGPT, REQUESTS_CSV)}
)
MOONCAKE = "mooncake"
REQUEST_FORMAT_NAMES: tuple[str, ...] = (*REQUEST_CSV_FORMATS, MOONCAKE)

__all__ = ["MOONCAKE", "REQUEST_CSV_FORMATS", "REQUEST_FORMAT_NAMES"]
