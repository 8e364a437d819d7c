"""Paths of the small traces shipped in ``dlsched/data/traces`` (see ``data/README.md``)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

TRACE_SUFFIXES = (".csv", ".parquet")


def bundled_trace_names() -> tuple[str, ...]:
    """The names :func:`bundled_trace_path` accepts, sorted."""
    return tuple(sorted(p.stem for p in _traces_dir().iterdir() if p.suffix in TRACE_SUFFIXES))


def bundled_trace_path(name: str) -> Path:
    """The file of bundled trace ``name`` (its file name without ``.csv`` or ``.parquet``,
    e.g. "vc_0e4a51").

    Raises ValueError for an unknown name, listing the known ones.
    """
    for suffix in TRACE_SUFFIXES:
        path = _traces_dir() / f"{name}{suffix}"
        if path.is_file():
            return path
    known = ", ".join(bundled_trace_names())
    raise ValueError(f"no bundled trace {name!r}; bundled traces: {known}")


def _traces_dir() -> Path:
    # The package is installed as plain files (editable or wheel), never zipped, so the
    # resource is a real directory; anything else is a broken installation worth stating.
    directory = resources.files("dlsched") / "data" / "traces"
    if not isinstance(directory, Path):
        raise RuntimeError(f"dlsched's bundled data is not on the file system: {directory}")
    return directory
