"""Paths of the LLM request traces and serving measurements shipped in
``dlsched/data/inference`` (sources and licences: ``data/README.md``)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

BUNDLED_REQUESTS = ("azure_code_3000", "azure_conv_5000")
"""The bundled request traces: the first 3,000 and 5,000 requests of the Azure LLM 2023
coding and conversation traces."""


def inference_data_path(file: str) -> Path:
    """The bundled file ``file`` of ``data/inference``; ValueError when there is none."""
    directory = resources.files("dlsched") / "data" / "inference"
    if not isinstance(directory, Path):
        raise RuntimeError(f"dlsched's bundled data is not on the file system: {directory}")
    path = directory / file
    if not path.is_file():
        raise ValueError(f"no bundled inference file {file!r}")
    return path


def bundled_requests_path(name: str) -> Path:
    """The CSV of bundled request trace ``name`` (one of :data:`BUNDLED_REQUESTS`)."""
    if name not in BUNDLED_REQUESTS:
        raise ValueError(
            f"no bundled request trace {name!r}; bundled: {', '.join(BUNDLED_REQUESTS)}"
        )
    return inference_data_path(f"{name}.csv")
