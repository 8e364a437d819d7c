"""Cluster description files (``cluster.toml``): reading, validating and writing.

Format (the full reference with examples is ``docs/cluster-format.md``)::

    name = "my-cluster"              # required, non-empty
    description = "two VCs"          # optional

    [[nodes]]                        # one table per group of identical machines, in order
    count = 16                       # nodes in the group, >= 1 (may be omitted if names given)
    gpus = 8                         # GPUs per node, >= 0 (required)
    gpu_type = "v100"                # default "gpu"; no "|" (that separates alternatives)
    partition = "vc-a"               # default "default"
    rack = "r1"                      # every node of the group in this rack, or ...
    rack_size = 8                    # ... fresh racks of this many nodes (default 16)
    block = "b0"                     # the block (racks under one spine) of the group's racks;
                                     # default "block0"; a rack lies in one block only
    cpus = 64                        # optional, >= 0; absent = CPUs not tracked
    memory_mib = 262144              # optional, >= 0; absent = memory not tracked
    names = ["a0", "a1"]             # optional explicit node names (exactly count of them), or
    name_prefix = "vca"              # optional prefix of generated names ("vca-000", ...)

Node order is group order. Generated names and automatic racks follow
:mod:`dlsched.cluster.layout`. Unknown keys, wrong types and out-of-range values are errors
whose message names the file, the group (``nodes[i]``, 0-based), the field and what was
expected.

:func:`write_cluster_toml` writes any :class:`ClusterSpec` so that :func:`read_cluster_toml`
gives back the same name, description and nodes (``source`` becomes the file path):
consecutive nodes equal in everything but name become one group with an explicit ``rack``
(split further only where the naming changes), and names are written only where the naming
rule would not regenerate them.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import tempfile
from collections.abc import Callable, Mapping
from itertools import groupby
from pathlib import Path
from typing import Any, TypeVar

from dlsched.cluster.errors import ClusterFormatError
from dlsched.cluster.layout import DEFAULT_RACK_SIZE, Layout, NodeGroup, default_name_prefix
from dlsched.cluster.layout import expand_group as _expand_group
from dlsched.cluster.limits import MAX_FILE_BYTES, MAX_GROUPS, size_problem
from dlsched.cluster.spec import (
    DEFAULT_BLOCK,
    DEFAULT_GPU_TYPE,
    DEFAULT_PARTITION,
    GPU_TYPE_SEPARATOR,
    ClusterSpec,
    NodeSpec,
)
from dlsched.outdir import FileKind
from dlsched.safe_load import TOML_TOKENS, InputError, load_toml, read_text

T = TypeVar("T")

TOP_LEVEL_KEYS = ("name", "description", "nodes")
GROUP_KEYS = (
    "count",
    "gpus",
    "gpu_type",
    "partition",
    "rack",
    "rack_size",
    "cpus",
    "memory_mib",
    "names",
    "name_prefix",
    "block",
)
_NAMES_PER_LINE_WIDTH = 96
_GROUP_HEADER = re.compile(r'^[ \t]*\[\[[ \t]*"?nodes"?[ \t]*\]\]', re.MULTILINE)


# ---------------------------------------------------------------- reading


class _Where:
    """Formats error messages that locate a problem in one source."""

    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, where: str, message: str) -> ClusterFormatError:
        return ClusterFormatError(f"{self.source}: {where}: {message}")


def _unknown_keys(table: Mapping[str, Any], allowed: tuple[str, ...]) -> str | None:
    for key in table:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            return f"unknown key {key!r}{hint}; allowed keys: {', '.join(allowed)}"
    return None


def _get(
    table: Mapping[str, Any],
    key: str,
    where: _Where,
    at: str,
    check: Callable[[Any], T | None],
    expected: str,
) -> T | None:
    """``check(value)`` if ``key`` is present (None if absent); errors name ``at.key``."""
    if key not in table:
        return None
    value = table[key]
    result = check(value)
    if result is None:
        raise where.error(f"{at}.{key}" if at else key, f"expected {expected}, got {value!r}")
    return result


def _int_at_least(minimum: int) -> Callable[[Any], int | None]:
    def check(value: Any) -> int | None:
        if isinstance(value, int) and not isinstance(value, bool) and value >= minimum:
            return value
        return None

    return check


def _amount(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number) and number >= 0:
            return number
    return None


def _text(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value
    return None


def _gpu_type(value: Any) -> str | None:
    if (
        isinstance(value, str)
        and value.strip() == value
        and value
        and GPU_TYPE_SEPARATOR not in value
    ):
        return value
    return None


def _names(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, list) and value and all(_text(v) is not None for v in value):
        return tuple(value)
    return None


def _parse_group(raw: Any, index: int, where: _Where) -> NodeGroup:
    at = f"nodes[{index}]"
    if not isinstance(raw, dict):
        raise where.error(at, f"expected a table, got {raw!r}")
    problem = _unknown_keys(raw, GROUP_KEYS)
    if problem:
        raise where.error(at, problem)
    count = _get(raw, "count", where, at, _int_at_least(1), "an integer >= 1 (nodes in the group)")
    gpus = _get(raw, "gpus", where, at, _int_at_least(0), "an integer >= 0 (GPUs per node)")
    gpu_type = _get(
        raw, "gpu_type", where, at, _gpu_type, "a non-empty string without '|' or outer blanks"
    )
    partition = _get(raw, "partition", where, at, _text, "a non-empty string")
    rack = _get(raw, "rack", where, at, _text, "a non-empty string")
    rack_size = _get(raw, "rack_size", where, at, _int_at_least(1), "an integer >= 1")
    cpus = _get(raw, "cpus", where, at, _amount, "a finite number >= 0")
    memory_mib = _get(raw, "memory_mib", where, at, _amount, "a finite number >= 0 (MiB)")
    names = _get(raw, "names", where, at, _names, "a non-empty array of non-empty strings")
    name_prefix = _get(raw, "name_prefix", where, at, _text, "a non-empty string")
    block = _get(raw, "block", where, at, _text, "a non-empty string (the group's block)")

    if gpus is None:
        raise where.error(f"{at}.gpus", "missing; expected an integer >= 0 (GPUs per node)")
    if rack is not None and rack_size is not None:
        raise where.error(at, "give either 'rack' (one rack) or 'rack_size' (racks of N), not both")
    if names is not None and name_prefix is not None:
        raise where.error(at, "give either 'names' or 'name_prefix', not both")
    if names is not None:
        if count is None:
            count = len(names)
        elif count != len(names):
            raise where.error(f"{at}.names", f"expected count = {count} names, got {len(names)}")
    if count is None:
        raise where.error(f"{at}.count", "missing; expected an integer >= 1 (nodes in the group)")
    return NodeGroup(
        count=count,
        gpus=gpus,
        gpu_type=DEFAULT_GPU_TYPE if gpu_type is None else gpu_type,
        partition=DEFAULT_PARTITION if partition is None else partition,
        rack=rack,
        rack_size=DEFAULT_RACK_SIZE if rack_size is None else rack_size,
        cpus=cpus,
        memory_mib=memory_mib,
        names=names,
        name_prefix=name_prefix,
        block=DEFAULT_BLOCK if block is None else block,
    )


def _expand(groups: list[NodeGroup], where: _Where) -> tuple[NodeSpec, ...]:
    layout = Layout()
    owner: dict[str, int] = {}
    rack_block: dict[str, tuple[str, int]] = {}
    nodes: list[NodeSpec] = []
    for index, group in enumerate(groups):
        for node in _expand_group(group, layout):
            block, first = rack_block.setdefault(node.rack, (node.block, index))
            if block != node.block:
                raise where.error(
                    f"nodes[{index}].block",
                    f"rack {node.rack!r} is already in block {block!r} (nodes[{first}]), "
                    f"got {node.block!r}; expected every node of a rack in one block",
                )
            if node.name in owner:
                raise where.error(
                    f"nodes[{index}]",
                    f"node name {node.name!r} is already used in nodes[{owner[node.name]}]; "
                    "node names must be unique",
                )
            owner[node.name] = index
            nodes.append(node)
    return tuple(nodes)


def _count_groups(text: str, where: _Where) -> None:
    """:class:`ClusterFormatError` for more than :data:`MAX_GROUPS` groups, counted in the
    text (``[[nodes]]`` headers, and inline tables outside strings) before it is parsed."""
    for count, match in enumerate(_GROUP_HEADER.finditer(text), start=1):
        if count > MAX_GROUPS:
            line = text.count("\n", 0, match.start()) + 1
            raise ClusterFormatError(
                f"{where.source}:{line}: nodes: more than {MAX_GROUPS:,} [[nodes]] groups "
                "(the limit; see docs/cluster-format.md)"
            )
    if text.count("{") <= MAX_GROUPS:
        return
    tables = 0
    for match in TOML_TOKENS.finditer(text):
        tables += match.group() == "{"
        if tables > MAX_GROUPS:
            line = text.count("\n", 0, match.start()) + 1
            raise ClusterFormatError(
                f"{where.source}:{line}: nodes: more than {MAX_GROUPS:,} groups "
                "(the limit; see docs/cluster-format.md)"
            )


def parse_cluster_toml(text: str, source: str = "<string>") -> ClusterSpec:
    """The cluster described by TOML ``text`` (format in the module docstring).

    ``source`` names the text in error messages and becomes ``ClusterSpec.source``. Raises
    :class:`ClusterFormatError` for TOML syntax errors, for every violation of the format and
    for a cluster over the limits of :mod:`dlsched.cluster.limits` (checked before any node is
    built; the number of groups before the text is parsed), and for what
    :func:`dlsched.safe_load.load_toml` refuses (NaN, infinities, huge numbers, deep nesting).
    """
    where = _Where(source)
    _count_groups(text, where)
    try:
        data = load_toml(text, source)
    except InputError as exc:
        raise ClusterFormatError(str(exc)) from None
    problem = _unknown_keys(data, TOP_LEVEL_KEYS)
    if problem:
        raise where.error("top level", problem)
    name = _get(data, "name", where, "", _text, "a non-empty string")
    if name is None:
        raise where.error("name", 'missing; expected a non-empty string, e.g. name = "my-cluster"')
    description = data.get("description", "")
    if not isinstance(description, str):
        raise where.error("description", f"expected a string, got {description!r}")
    raw_groups = data.get("nodes")
    if raw_groups is None:
        raise where.error("nodes", "missing; expected at least one [[nodes]] table")
    if not isinstance(raw_groups, list) or not raw_groups:
        raise where.error(
            "nodes", f"expected a non-empty array of [[nodes]] tables, got {raw_groups!r}"
        )
    if len(raw_groups) > MAX_GROUPS:
        raise where.error("nodes", f"more than {MAX_GROUPS:,} groups (the limit)")
    groups = [_parse_group(raw, i, where) for i, raw in enumerate(raw_groups)]
    too_big = size_problem(groups)
    if too_big is not None:
        raise where.error(too_big[0], f"{too_big[1]} (see docs/cluster-format.md)")
    return ClusterSpec(name, _expand(groups, where), description, source)


def read_cluster_toml(path: str | os.PathLike[str]) -> ClusterSpec:
    """The cluster described by the TOML file at ``path``; errors name the file.

    Raises ``FileNotFoundError`` if there is no such file, :class:`ClusterFormatError` if its
    content is not a valid cluster description (including non-UTF-8 bytes).
    """
    file = Path(path)
    try:
        text = read_text(file, MAX_FILE_BYTES)
    except InputError as exc:
        raise ClusterFormatError(str(exc)) from None
    return parse_cluster_toml(text, source=str(file))


# ---------------------------------------------------------------- writing

_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def _toml_string(value: str) -> str:
    out = []
    for ch in value:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _toml_number(value: float) -> str:
    # bool is not a number here, and repr() of a finite float is valid TOML ("1e+20", "96.0").
    return str(value) if isinstance(value, int) else repr(float(value))


def _names_array(names: list[str]) -> list[str]:
    lines = ["names = ["]
    line = "   "
    for item in (_toml_string(n) + "," for n in names):
        if len(line) + 1 + len(item) > _NAMES_PER_LINE_WIDTH and line.strip():
            lines.append(line)
            line = "   "
        line += " " + item
    lines.append(line)
    lines.append("]")
    return lines


def _naming_runs(
    names: list[str], gpu_type: str, layout: Layout
) -> list[tuple[str | None, list[str]]]:
    """Split one group's names into runs that reading regenerates exactly, advancing ``layout``.

    Each run is ``(prefix, names)``: names generated from ``prefix`` by the naming rule, or
    ``(None, names)`` for names that must be written out. Deciding node by node against the
    reader's counters keeps the runs as long as the rule allows.
    """
    default = default_name_prefix(gpu_type)
    runs: list[tuple[str | None, list[str]]] = []
    for name in names:
        prefix: str | None = None
        candidate = name.rsplit("-", 1)[0]
        if name == layout.next_name(default):
            prefix = default
        elif "-" in name and name == layout.next_name(candidate):
            prefix = candidate
        if prefix is not None:
            layout.take_names(prefix, 1)
        if runs and runs[-1][0] == prefix:
            runs[-1][1].append(name)
        else:
            runs.append((prefix, [name]))
    return runs


def _group_key(node: NodeSpec) -> tuple[object, ...]:
    return (
        node.gpus,
        node.gpu_type,
        node.partition,
        node.rack,
        node.block,
        node.cpus,
        node.memory_mib,
    )


def format_cluster_toml(spec: ClusterSpec) -> str:
    """``spec`` as cluster-file text; :func:`parse_cluster_toml` of it gives the same nodes.

    Raises :class:`ClusterFormatError` if the spec cannot be represented (for example an empty
    name, no nodes, a GPU type containing ``|``, or negative or non-finite CPUs or memory).
    """
    lines = [
        "# dlsched cluster description; format: docs/cluster-format.md",
        f"name = {_toml_string(spec.name)}",
    ]
    if spec.description:
        lines.append(f"description = {_toml_string(spec.description)}")
    layout = Layout()
    for _, run in groupby(spec.nodes, key=_group_key):
        nodes = list(run)
        first = nodes[0]
        default_prefix = default_name_prefix(first.gpu_type)
        for prefix, names in _naming_runs([n.name for n in nodes], first.gpu_type, layout):
            lines += [
                "",
                "[[nodes]]",
                f"count = {len(names)}",
                f"gpus = {first.gpus}",
                f"gpu_type = {_toml_string(first.gpu_type)}",
                f"partition = {_toml_string(first.partition)}",
                f"rack = {_toml_string(first.rack)}",
            ]
            if first.block != DEFAULT_BLOCK:
                lines.append(f"block = {_toml_string(first.block)}")
            if first.cpus is not None:
                lines.append(f"cpus = {_toml_number(first.cpus)}")
            if first.memory_mib is not None:
                lines.append(f"memory_mib = {_toml_number(first.memory_mib)}")
            if prefix is None:
                lines += _names_array(names)
            elif prefix != default_prefix:
                lines.append(f"name_prefix = {_toml_string(prefix)}")
    text = "\n".join(lines) + "\n"
    # The reader's validation is the definition of a representable spec, so check against it
    # instead of duplicating every rule here.
    try:
        back = parse_cluster_toml(text, source=f"<cluster {spec.name!r} as TOML>")
    except ClusterFormatError as exc:
        raise ClusterFormatError(f"cannot write cluster {spec.name!r} as TOML: {exc}") from exc
    if back.nodes != spec.nodes or (back.name, back.description) != (spec.name, spec.description):
        raise ClusterFormatError(f"cannot write cluster {spec.name!r} as TOML: round trip differs")
    return text


def write_cluster_toml(spec: ClusterSpec, path: str | os.PathLike[str]) -> Path:
    """Write ``spec`` to ``path`` atomically (temp file in the same directory, then replace).

    Missing parent directories are created. Readers never see a partial file; on any error
    the temp file is removed and an existing file at ``path`` is left as it was. Returns the
    path written.
    """
    target = Path(path)
    text = format_cluster_toml(spec)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            # mkstemp creates the file private (0600); a cluster file is meant to be shared.
            os.fchmod(handle.fileno(), 0o644)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return target


def _is_cluster_file(path: Path) -> bool:
    try:
        read_cluster_toml(path)
    except (ClusterFormatError, OSError, ValueError):
        return False
    return True


CLUSTER_FILE = FileKind("dlsched cluster file", _is_cluster_file)
"""Cluster files as a command's output (:mod:`dlsched.outdir`): ``CLUSTER_FILE.check(out,
force)`` before :func:`write_cluster_toml`, which itself replaces unconditionally."""
