"""Typed access to the fields of one CSV record, failing with the field's name and the reason."""

from __future__ import annotations

import math
from collections.abc import Mapping

from dlsched.safe_load import check_date, number_problem, shown
from dlsched.trace.walltime import parse_wall_time


class BadField(Exception):
    """A field of the current record cannot be accepted; the reader turns it into a RowError."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class Row:
    """The current record of a CSV file, addressed by column name.

    One instance is reused for every record of a file (``values`` is replaced), which keeps the
    per-row cost to a list lookup. Methods named ``opt_*`` return None for an empty field or a
    column the header does not have; the others raise :class:`BadField` for an empty field.
    """

    __slots__ = ("_index", "values")

    def __init__(self, index: Mapping[str, int]) -> None:
        self._index = dict(index)
        self.values: list[str] = []

    def has(self, name: str) -> bool:
        """Whether the header has column ``name``."""
        return name in self._index

    def text(self, name: str) -> str:
        """The field as written; an empty field is an error."""
        value = self.values[self._index[name]]
        if not value:
            raise BadField(name, "missing value")
        return value

    def opt_text(self, name: str) -> str | None:
        """The field as written, or None when empty or absent."""
        i = self._index.get(name)
        if i is None:
            return None
        return self.values[i] or None

    def number(self, name: str) -> float:
        """A finite number."""
        return _to_float(name, self.text(name))

    def opt_number(self, name: str) -> float | None:
        """A finite number, or None when empty or absent."""
        value = self.opt_text(name)
        return None if value is None else _to_float(name, value)

    def integer(self, name: str, bits: int = 32) -> int:
        """A signed integer of ``bits`` bits (the width of its canonical column); an integral
        decimal such as ``8.0`` (pandas writes those) is accepted."""
        return _to_int(name, self.text(name), bits)

    def opt_integer(self, name: str, bits: int = 32) -> int | None:
        """An integer as :meth:`integer`, or None when empty or absent."""
        value = self.opt_text(name)
        return None if value is None else _to_int(name, value, bits)

    def opt_flag(self, name: str) -> bool | None:
        """A yes/no field: ``true``/``1`` or ``false``/``0`` (any case), or None when empty or
        absent."""
        value = self.opt_text(name)
        if value is None:
            return None
        flag = _FLAGS.get(value.strip().lower())
        if flag is None:
            raise BadField(name, f"{shown(value)} is not a yes/no value (true, false, 1 or 0)")
        return flag

    def wall_time(self, name: str) -> float:
        """A naive ``YYYY-MM-DD HH:MM:SS`` stamp as Unix seconds (read as UTC), dated within
        :data:`dlsched.safe_load.EARLIEST_DATE` .. :data:`~dlsched.safe_load.LATEST_DATE`."""
        return _to_wall(name, self.text(name))

    def opt_wall_time(self, name: str) -> float | None:
        """A wall time as Unix seconds, or None when empty or absent."""
        value = self.opt_text(name)
        return None if value is None else _to_wall(name, value)


_FLAGS = {"true": True, "1": True, "false": False, "0": False}


def show_number(value: float) -> str:
    """A number for a message: integral values without a fraction, others in full."""
    value = float(value)  # a numpy scalar's repr names its type
    if value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value)


def _to_float(name: str, text: str) -> float:
    _check_length(name, text)
    try:
        value = float(text)
    except ValueError:
        raise BadField(name, f"not a number: {shown(text)}") from None
    if not math.isfinite(value):
        raise BadField(name, f"not a finite number: {shown(text)}")
    return value


def _check_length(name: str, text: str) -> None:
    # Before any conversion: int() of over 4,300 digits raises a ValueError naming no field.
    problem = number_problem(text.strip())
    if problem is not None:
        raise BadField(name, problem)


def _to_int(name: str, text: str, bits: int) -> int:
    _check_length(name, text)
    try:
        value = int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            raise BadField(name, f"not an integer: {shown(text)}") from None
        if not number.is_integer():
            raise BadField(name, f"not an integer: {shown(text)}") from None
        value = int(number)
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise BadField(name, f"out of range for a {bits}-bit integer: {shown(text)}")
    return value


def _to_wall(name: str, text: str) -> float:
    try:
        return check_date(parse_wall_time(text), text)
    except ValueError as e:
        raise BadField(name, str(e)) from None
