"""Labels of compared runs, from what differs between their ``config.json`` files.

A run's configuration is flattened to fields named by their dotted path, without the ``sim.``
section (``policy``, ``placement``, ``queues``, ``power.manager``, ``selection.subsample``,
``trace``, ``cluster``, ...); an empty table adds no field. A group of runs (a sweep group)
has the fields all its runs agree on, less any field that differs within some group and the
seed it pools (:func:`group_fields`). The fields shown are those whose values
differ between the runs (or groups) compared, a field one of them lacks included, ordered as
:data:`FIELD_ORDER` and then by name. A run's label is its values of those fields joined by
``" / "`` (a lone varying field: its value alone, e.g. the policy). Values are written plainly:
a file path by its name when the names still tell the values apart, null as ``none``, a list
comma-separated, a missing field :data:`ABSENT`. When no field differs, the labels are the
runs' directory names; a label that would repeat another gets ``#i`` (its position) added.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlsched.safe_load import InputError, load_json, read_text

FIELD_ORDER = ("policy", "kind_policies", "placement", "queues", "trace", "cluster", "seed")
"""Fields shown first, in this order (a prefix covers its subfields: ``kind_policies.ps``)."""
ABSENT = "n/a"
SECTION = "sim."
"""The section of ``config.json`` whose fields are named without it."""
SEPARATOR = " / "

Fields = dict[str, Any]
_MISSING = object()
"""A field a run lacks."""


@dataclass(frozen=True)
class Labels:
    """The ``fields`` that differ (display names, in order), each run's ``values`` of them
    (written as in its label) and its ``label``."""

    fields: tuple[str, ...]
    values: tuple[dict[str, str], ...]
    labels: tuple[str, ...]


def read_config(run: str | Path) -> dict[str, Any]:
    """The ``config.json`` of run directory ``run``; ValueError naming the file when it is
    missing or not a JSON object."""
    path = Path(run) / "config.json"
    if not path.is_file():
        raise ValueError(f"{path}: missing; a run directory holds config.json")
    try:
        data = load_json(read_text(path), str(path), non_finite=True)
    except InputError as exc:
        raise ValueError(str(exc)) from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return data


def flat_fields(config: Mapping[str, Any], prefix: str = "") -> Fields:
    """``config`` as fields by dotted path (module docstring); lists become tuples."""
    out: Fields = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flat_fields(value, f"{name}."))
        else:
            shown = name[len(SECTION) :] if name.startswith(SECTION) else name
            out[shown] = tuple(value) if isinstance(value, list) else value
    return out


def _agreed(runs: Sequence[Fields]) -> Fields:
    first, *others = runs
    return {k: v for k, v in first.items() if all(k in o and o[k] == v for o in others)}


def group_fields(groups: Sequence[Sequence[Fields]], pooled: Sequence[str] = ()) -> list[Fields]:
    """Each group's fields: those all its runs agree on, less the fields some group's runs
    differ in and the fields ``pooled`` (a sweep's seed): what is pooled within a group
    labels none."""
    agreed = [_agreed(runs) for runs in groups]
    varied = {
        k for runs, fields in zip(groups, agreed, strict=True) for r in runs for k in r
        if k not in fields
    }  # fmt: skip
    dropped = varied | set(pooled)
    return [{k: v for k, v in fields.items() if k not in dropped} for fields in agreed]


def run_labels(runs: Sequence[Fields], names: Sequence[str]) -> Labels:
    """The labels of ``runs`` (each one's fields; ``names``: their directory names, used
    when no field differs), as the module docstring says."""
    keys = sorted({k for r in runs for k in r}, key=_order)
    differing = tuple(k for k in keys if len({_token(r.get(k, _MISSING)) for r in runs}) > 1)
    written = {k: _written([r.get(k, _MISSING) for r in runs]) for k in differing}
    values = tuple({k: written[k][i] for k in differing} for i in range(len(runs)))
    labels = [SEPARATOR.join(v.values()) for v in values] if differing else list(names)
    seen: dict[str, int] = {}
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
    unique = tuple(
        label if seen[label] == 1 else f"{label} #{i + 1}" for i, label in enumerate(labels)
    )
    return Labels(differing, values, unique)


def _order(key: str) -> tuple[int, str]:
    for i, name in enumerate(FIELD_ORDER):
        if key == name or key.startswith(f"{name}."):
            return i, key
    return len(FIELD_ORDER), key


def _token(value: Any) -> str:
    """``value`` as compared: JSON text, a whole float as its int (1.0 and 1 agree)."""
    if value is _MISSING:
        return ABSENT
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, tuple):
        return "[" + ",".join(_token(v) for v in value) + "]"
    return json.dumps(value, sort_keys=True, default=str)


def _written(values: list[Any]) -> list[str]:
    """One field's values as labels write them; file paths by name when that keeps the
    distinct values distinct."""
    text = [_text(v) for v in values]
    paths = [v for v in values if isinstance(v, str) and "/" in v]
    if paths:
        short = [
            Path(v).name if isinstance(v, str) and "/" in v else t
            for v, t in zip(values, text, strict=True)
        ]
        if len(set(short)) == len(set(text)):
            return short
    return text


def _text(value: Any) -> str:
    if value is _MISSING:
        return ABSENT
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(_text(v) for v in value) if value else "none"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
