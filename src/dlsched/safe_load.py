"""Safe loaders for the files dlsched reads (YAML, TOML, JSON, JSON lines, CSV lines) and the
limits they enforce, stated here once (documented in ``docs/reference/simulate.md``,
*Input limits*).

A hostile or broken file must fail fast with one line naming the file, the line (or document)
and the field, never hang, exhaust memory or end in a traceback. Every loader here therefore:

- reads at most :data:`MAX_FILE_BYTES` of a whole-file document and at most
  :data:`MAX_LINE_CHARS` characters of one line (a longer line is refused without being read
  whole: :func:`bounded_lines`, :func:`read_line`);
- refuses nesting deeper than :data:`MAX_NESTING` before the parser recurses into it;
- refuses a number written with more than :data:`MAX_NUMBER_CHARS` characters, a non-finite
  one (NaN, infinities, a literal such as ``1e400`` that overflows) and an integer beyond
  :data:`MAX_INTEGER`;
- for YAML: refuses anchors and aliases (an alias bomb expands a few KB into billions of
  nodes), duplicate keys in any mapping at any level, and more than :data:`MAX_YAML_NODES`
  nodes.

Wall-clock dates in traces must lie in ``[EARLIEST_DATE, LATEST_DATE)`` (:func:`check_date`).

Errors are :class:`InputError` (a ValueError); callers re-raise them as their own error type
with the same one-line message.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

MAX_FILE_BYTES = 64 * 2**20
"""Largest whole-file document (a YAML manifest, a TOML or JSON configuration): 64 MiB."""
MAX_LINE_CHARS = 2**20
"""Longest line of any text input (a CSV record, a JSON-lines request, a configuration line)."""
MAX_NESTING = 64
"""Deepest nesting of mappings and lists in a YAML, TOML or JSON document."""
MAX_NUMBER_CHARS = 100
"""Most characters a number may be written with (digits, sign, point, exponent, ``_``)."""
MAX_INTEGER = 2**63 - 1
"""Largest magnitude of an integer in a YAML, TOML or JSON document (a signed 64-bit one)."""
MAX_YAML_NODES = 1_000_000
"""Most scalars, mappings and sequences in one YAML file."""
EARLIEST_DATE = datetime(2000, 1, 1)
LATEST_DATE = datetime(2100, 1, 1)
"""Wall-clock dates a trace may give lie in ``[EARLIEST_DATE, LATEST_DATE)`` (UTC): outside
it a stamp is a corrupt row (one row of year 9999 would make a makespan of 8,000 years)."""

_EPOCH = datetime(1970, 1, 1)
EARLIEST_UNIX = (EARLIEST_DATE - _EPOCH).total_seconds()
LATEST_UNIX = (LATEST_DATE - _EPOCH).total_seconds()

_DIGIT_RUN = re.compile("[0-9][0-9_]{" + str(MAX_NUMBER_CHARS) + ",}")
# Anchored at line starts, so each line is tried once: linear in the text.
_LONG_LINE = re.compile("^[^\\n]{" + str(MAX_LINE_CHARS + 1) + "}", re.MULTILINE)


class InputError(ValueError):
    """An input file breaks a limit or a rule of its format. The message is one line:
    ``source[:line]: [field: ]what was expected``."""

    def __init__(
        self, source: str, expected: str, line: int | None = None, field: str | None = None
    ) -> None:
        where = source if line is None else f"{source}:{line}"
        super().__init__(f"{where}: {field}: {expected}" if field else f"{where}: {expected}")
        self.source = source
        self.line = line
        self.field = field
        self.expected = expected


def shown(text: str, limit: int = 40) -> str:
    """``repr(text)`` cut to about ``limit`` characters, saying how long it was: a message must
    stay one short line whatever a file holds."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text):,} characters)"


# ------------------------------------------------------------------ numbers and dates


def number_problem(text: str) -> str | None:
    """Why the number written ``text`` is refused by length alone (None: not too long).
    Checked before conversion: ``int()`` of a 5,000-digit string raises a ValueError that
    names no file, and converting huge literals costs quadratic time."""
    if len(text) > MAX_NUMBER_CHARS:
        return f"a number of {len(text):,} characters (the limit is {MAX_NUMBER_CHARS})"
    return None


def value_problem(value: object) -> str | None:
    """Why a parsed number is refused (None: a finite float or an integer within
    :data:`MAX_INTEGER`, or not a number at all)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"expected a finite number, got {value!r}"
    if isinstance(value, int) and abs(value) > MAX_INTEGER:
        return f"an integer beyond {MAX_INTEGER:,} (64 bits)"
    if isinstance(value, _Refused):
        return value.reason
    return None


def check_date(unix: float, text: str) -> float:
    """``unix`` (the Unix seconds of wall time ``text``) if it lies in ``[EARLIEST_DATE,
    LATEST_DATE)``; ValueError saying so otherwise."""
    if not EARLIEST_UNIX <= unix < LATEST_UNIX:
        raise ValueError(
            f"date {shown(text)} is outside {EARLIEST_DATE:%Y-%m-%d} to "
            f"{LATEST_DATE:%Y-%m-%d} (the dates a trace may give)"
        )
    return unix


# ------------------------------------------------------------------ lines and files


def read_text(path: str | Path, limit: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of file ``path`` (a leading BOM dropped), at most ``limit`` bytes;
    :class:`InputError` naming the file for a larger or non-UTF-8 file. ``FileNotFoundError``
    and other ``OSError`` pass through for the caller to word."""
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputError(str(path), f"larger than {limit:,} bytes (the limit for this file)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(str(path), f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    check_lines(text, str(path))
    return text


def check_lines(text: str, source: str) -> None:
    """:class:`InputError` naming the first line of ``text`` longer than
    :data:`MAX_LINE_CHARS`."""
    match = _LONG_LINE.search(text)
    if match is not None:
        line = text.count("\n", 0, match.start()) + 1
        raise InputError(source, f"a line longer than {MAX_LINE_CHARS:,} characters", line)


@dataclass(frozen=True)
class LongLine:
    """A line longer than :data:`MAX_LINE_CHARS`, skipped without being held in memory."""

    chars: int


def read_line(handle: IO[str]) -> str | LongLine:
    """The next line of ``handle`` ('' at the end), or :class:`LongLine` when it is longer than
    :data:`MAX_LINE_CHARS`, in which case the rest of it is read in bounded pieces and
    dropped: memory stays bounded whatever the file holds."""
    text = handle.readline(MAX_LINE_CHARS + 1)
    if len(text) <= MAX_LINE_CHARS or text.endswith("\n"):
        return text
    total = len(text)
    while True:
        piece = handle.readline(MAX_LINE_CHARS)
        total += len(piece)
        if not piece or piece.endswith("\n"):
            return LongLine(total)


def bounded_lines(handle: IO[str], source: str) -> Iterator[str]:
    """The lines of ``handle`` (for ``csv.reader``); :class:`InputError` naming ``source`` and
    the line for one longer than :data:`MAX_LINE_CHARS`, raised before it is read whole."""
    number = 0
    while True:
        text = read_line(handle)
        number += 1
        if isinstance(text, LongLine):
            raise InputError(
                source,
                f"a line of {text.chars:,} characters (the limit is {MAX_LINE_CHARS:,})",
                number,
            )
        if not text:
            return
        yield text


def _digit_runs(text: str, source: str) -> None:
    match = _DIGIT_RUN.search(text)
    if match is not None:
        line = text.count("\n", 0, match.start()) + 1
        raise InputError(
            source,
            f"a number of more than {MAX_NUMBER_CHARS} digits (the limit is {MAX_NUMBER_CHARS})",
            line,
        )


# ------------------------------------------------------------------ nested values


@dataclass(frozen=True)
class _Refused:
    """A number a JSON or TOML parser hook refused; found and reported with its field."""

    reason: str


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_./-]{1,64}")


def key_text(key: object) -> str:
    """A key as a message shows it: as written when plain, else quoted and cut (a key may
    hold line breaks or be megabytes long)."""
    text = str(key)
    return text if _PLAIN_KEY.fullmatch(text) else shown(text)


def _field(path: tuple[str | int, ...]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{key_text(part)}" if out else key_text(part)
    return out or "(top level)"


def check_value(
    value: object, source: str, line: int | None = None, *, non_finite: bool = False
) -> None:
    """:class:`InputError` naming the field (``a.b[2]``) of the first refused number in
    ``value`` (see :func:`value_problem`; NaN and infinities pass with ``non_finite``) or
    the first place nested deeper than :data:`MAX_NESTING`. Iterative: a deep value cannot
    exhaust the stack."""
    stack: list[tuple[tuple[str | int, ...], object]] = [((), value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, dict | list):
            if len(path) >= MAX_NESTING:
                raise InputError(
                    source, f"nested deeper than {MAX_NESTING} levels", line, _field(path)
                )
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            stack.extend(((*path, k), v) for k, v in reversed(list(pairs)))
            continue
        if non_finite and isinstance(item, float):
            continue
        problem = value_problem(item)
        if problem is not None:
            raise InputError(source, problem, line, _field(path))


def _float_hook(text: str) -> float | _Refused:
    problem = number_problem(text)
    if problem is not None:
        return _Refused(problem)
    value = float(text)
    if not math.isfinite(value):
        return _Refused(f"expected a finite number, got {shown(text)}")
    return value


def _int_hook(text: str) -> int | _Refused:
    problem = number_problem(text)
    return _Refused(problem) if problem is not None else int(text)


def _constant_hook(text: str) -> _Refused:
    return _Refused(f"expected a finite number, got {text}")


def _bracket_depth(text: str, strings: re.Pattern[str]) -> int:
    """Deepest nesting of ``[``/``{`` in ``text`` outside the strings (and comments) that
    ``strings`` matches; cheap when the text has few brackets."""
    if text.count("[") + text.count("{") <= MAX_NESTING:
        return 0
    depth = deepest = 0
    for match in strings.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth -= 1
    return deepest


_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')
# TOML's strings and comments (so that brackets inside them are not counted) and brackets.
TOML_TOKENS = re.compile(
    r'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*|[\[\]{}]',
    re.DOTALL,
)


def load_json(text: str, source: str, line: int | None = None, *, non_finite: bool = False) -> Any:
    """The JSON value of ``text`` (a file's text, or one line of a JSON-lines file: then
    ``line`` is its number); :class:`InputError` for invalid JSON, NaN or infinities, a
    number out of bounds or nesting deeper than :data:`MAX_NESTING`, naming the field.
    ``non_finite`` accepts NaN and infinities (dlsched's own summaries write NaN for a mean
    of nothing); the other bounds still hold."""
    if _bracket_depth(text, _JSON_TOKENS) > MAX_NESTING:
        raise InputError(source, f"nested deeper than {MAX_NESTING} levels", line)
    try:
        value = json.loads(
            text,
            parse_float=float if non_finite else _float_hook,
            parse_int=_int_hook,
            parse_constant=float if non_finite else _constant_hook,
        )
    except json.JSONDecodeError as exc:
        where = line if line is not None else exc.lineno
        raise InputError(source, f"not JSON: {exc.msg} at column {exc.colno}", where) from None
    except RecursionError:
        raise InputError(source, f"nested deeper than {MAX_NESTING} levels", line) from None
    check_value(value, source, line, non_finite=non_finite)
    return value


def load_toml(text: str, source: str) -> dict[str, Any]:
    """The TOML document ``text``; :class:`InputError` naming ``source`` (and the line or key)
    for invalid TOML, a line longer than :data:`MAX_LINE_CHARS`, a number out of bounds
    (``nan``, ``inf``, ``1e400``, 101 digits), or nesting deeper than :data:`MAX_NESTING`."""
    check_lines(text, source)
    if _bracket_depth(text, TOML_TOKENS) > MAX_NESTING:
        raise InputError(source, f"nested deeper than {MAX_NESTING} levels")
    try:
        data = tomllib.loads(text, parse_float=_float_hook)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(source, f"not valid TOML: {exc}") from None
    except ValueError:
        # int() of more than 4,300 digits, inside tomllib: find the line of the long number.
        _digit_runs(text, source)
        raise
    except RecursionError:
        raise InputError(source, f"nested deeper than {MAX_NESTING} levels") from None
    check_value(data, source)
    return data


# ------------------------------------------------------------------ YAML


def _yaml_line(mark: Any) -> int | None:
    return mark.line + 1 if mark is not None else None


def _scan_yaml_events(yaml: Any, loader: type, text: str, source: str) -> None:
    """Refuse anchors, aliases, deep nesting and too many nodes from the event stream, before
    anything is composed (libyaml's composer recurses; construction could expand aliases)."""
    depth = nodes = 0
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            kind = "alias" if isinstance(event, yaml.AliasEvent) else "anchor"
            raise InputError(
                source,
                f"YAML {kind} {event.anchor!r}: anchors and aliases are not accepted "
                "(write the value out)",
                _yaml_line(event.start_mark),
            )
        if isinstance(event, yaml.ScalarEvent | yaml.MappingStartEvent | yaml.SequenceStartEvent):
            nodes += 1
            if nodes > MAX_YAML_NODES:
                raise InputError(
                    source, f"more than {MAX_YAML_NODES:,} YAML nodes", _yaml_line(event.start_mark)
                )
        if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            depth += 1
            if depth > MAX_NESTING:
                raise InputError(
                    source, f"nested deeper than {MAX_NESTING} levels", _yaml_line(event.start_mark)
                )
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            depth -= 1


_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


def _scalar_problem(node: Any) -> str | None:
    """Why the YAML number scalar ``node`` is refused (None: it is not), before it is
    converted: too long, non-finite, or an integer beyond :data:`MAX_INTEGER`."""
    text = str(node.value)
    problem = number_problem(text)
    if problem is not None:
        return problem
    if node.tag == _NUMBER_TAGS[1]:
        lowered = text.lower()
        if "inf" in lowered or "nan" in lowered:
            return f"expected a finite number, got {shown(text)}"
        try:
            value = float(lowered.replace("_", ""))
        except ValueError:  # a sexagesimal 1:30.5, which PyYAML converts itself
            return None
        return None if math.isfinite(value) else f"expected a finite number, got {shown(text)}"
    digits = text.lstrip("+-").replace("_", "")
    if digits.isdigit() and not digits.startswith("0") and abs(int(digits)) > MAX_INTEGER:
        return f"an integer beyond {MAX_INTEGER:,} (64 bits)"
    return None


def _strict_loader(yaml: Any, source: str) -> type:
    """A safe loader (libyaml's when available) that refuses duplicate keys and numbers out
    of bounds, naming the line."""
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    def fail(node: Any, expected: str, field: str | None = None) -> InputError:
        return InputError(source, expected, _yaml_line(node.start_mark), field)

    class StrictLoader(base):  # type: ignore[misc, valid-type]
        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            seen: set[Any] = set()
            for key_node, value_node in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    fresh = key not in seen
                except TypeError:
                    raise fail(key_node, "a mapping key must be a scalar") from None
                if not fresh:
                    raise fail(key_node, "duplicate key (given twice in a mapping)", key_text(key))
                seen.add(key)
                if value_node.tag in _NUMBER_TAGS:
                    problem = _scalar_problem(value_node)
                    if problem is not None:
                        raise fail(value_node, problem, key_text(key))
            result: dict[Any, Any] = super().construct_mapping(node, deep=deep)
            return result

        def construct_yaml_int(self, node: Any) -> int:
            problem = _scalar_problem(node)
            if problem is not None:
                raise fail(node, problem)
            value: int = super().construct_yaml_int(node)
            problem = value_problem(value)  # 0x..., 0o..., 1:30: bounded once converted
            if problem is not None:
                raise fail(node, problem)
            return value

        def construct_yaml_float(self, node: Any) -> float:
            problem = _scalar_problem(node)
            if problem is not None:
                raise fail(node, problem)
            value: float = super().construct_yaml_float(node)
            return value

    StrictLoader.add_constructor(
        "tag:yaml.org,2002:int",
        StrictLoader.construct_yaml_int,
    )
    StrictLoader.add_constructor(
        "tag:yaml.org,2002:float",
        StrictLoader.construct_yaml_float,
    )
    return StrictLoader


def load_yaml_documents(text: str, source: str) -> list[object]:
    """Every document of the YAML text ``text``; :class:`InputError` naming ``source`` and the
    line for a syntax error, an anchor or alias, a duplicate key, a number out of bounds,
    nesting deeper than :data:`MAX_NESTING` or more than :data:`MAX_YAML_NODES` nodes.
    Needs PyYAML (the caller checks it is installed)."""
    import yaml

    check_lines(text, source)
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        _scan_yaml_events(yaml, base, text, source)
        return list(yaml.load_all(text, Loader=_strict_loader(yaml, source)))
    except yaml.YAMLError as exc:
        line = _yaml_line(getattr(exc, "problem_mark", None))
        raise InputError(source, f"not valid YAML: {getattr(exc, 'problem', exc)}", line) from None
