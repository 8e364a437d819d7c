"""Property-based fuzzing of the co-location profile readers, ``parse_pairs`` (Lucid's
``colocate_info.csv``) and ``parse_single`` (``single_data.csv``).

Two generators: files built row by row near valid ones (columns dropped, added or reordered,
fields replaced by hostile text or numbers, rows repeated, reversed, cut short or widened,
quoted by the csv module or joined raw), and the bundled Lucid files with a few random edits
(spans deleted, hostile text inserted, lines repeated or swapped, the file cut). Every file is
either read, with every value inside the readers' bounds, or refused with a ProfileError of
one line naming the file (and the line for a row), never another exception.
``DLSCHED_FUZZ_EXAMPLES=N`` runs N examples per test.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Callable
from importlib import resources
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dlsched.perf import interference
from dlsched.perf.interference import (
    PAIR_COLUMNS,
    SINGLE_COLUMNS,
    InterferenceModel,
    ProfileError,
    Workload,
    WorkloadProfile,
    parse_pairs,
    parse_single,
)
from tests.fuzz.strategies import fuzz, nasty_text

LUCID = resources.files("dlsched") / "data" / "profiles" / "lucid"
BUNDLED = {
    "pairs": (LUCID / "colocate_info.csv").read_text(),
    "single": (LUCID / "single_data.csv").read_text(),
}


number_texts = st.one_of(
    st.integers(-(2**40), 2**40).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(1, 60).map(lambda n: "9" * n),
    st.sampled_from(
        ["nan", "NaN", "inf", "-inf", "1e400", "-0", "0", "1", "2", "0.5", "0.01", "0.009",
         "10", "10.0001", "100", "100.5", "1e-320", "2147483647", "2147483648", "1_0",
         "\u0663\u0662", " 32 ", "0x10", "1.0", "1e0", ""]
    ),
)  # fmt: skip
fields = st.one_of(
    number_texts, nasty_text, st.sampled_from(['"', '"a', 'a"b', '""', "\r", "\n", ",", "a,b"])
)
models = st.one_of(
    st.sampled_from(["ResNet18", "VGG", "BERT", "LSTM", "A", " A ", "a"]),
    st.sampled_from(["", " ", "M" * 100, "M" * 101, "\x00", "\u202e"]),
    nasty_text,
)
EXTRA_COLUMNS = ("", "dataset1", "dataset2", "gpu_num1", "gpu_util", "speed", "dataset", "x")


def good_value(column: str, i: int) -> str:
    """A valid value of ``column`` on row ``i`` (workloads differ by row, and the second job
    of a pair from the first)."""
    base = column.rstrip("12")
    i += column.endswith("2")
    if base == "model":
        return ["ResNet18", "VGG", "LSTM", "A"][i % 4]
    return {
        "batchsize": str(2 ** (i % 5 + 3)),
        "amp": str(i % 2),
        "speed": "0.9",
        "gpu_util": "55.5",
        "gmem": "2048",
        "label": str(i % 3),
    }.get(base, "q")


@st.composite
def profile_files(draw: st.DrawFn, needed: tuple[str, ...]) -> str:
    columns = list(needed)
    change = draw(st.integers(0, 9))
    if change == 0:
        columns.pop(draw(st.integers(0, len(columns) - 1)))
    elif change == 1:
        columns.insert(draw(st.integers(0, len(columns))), draw(st.sampled_from(EXTRA_COLUMNS)))
    elif change == 2:
        columns = draw(st.permutations(columns))
    elif change == 3:
        columns.append(columns[draw(st.integers(0, len(columns) - 1))])
    rows: list[list[str]] = []
    for i in range(draw(st.integers(0, 8))):
        row = [good_value(c, i) for c in columns]
        kind = draw(st.integers(0, 9))
        if kind <= 2 and row:
            at = draw(st.integers(0, len(row) - 1))
            row[at] = draw(models) if columns[at].startswith("model") else draw(fields)
        elif kind == 3 and rows:
            row = list(draw(st.sampled_from(rows)))
        elif kind == 4 and rows and len(row) == 8:
            # The same pair in the other order (pair files: four columns per job).
            earlier = draw(st.sampled_from(rows))
            row = earlier[4:] + earlier[:4]
        elif kind == 5:
            row = row[: draw(st.integers(0, len(row)))]
        elif kind == 6:
            row += draw(st.lists(fields, min_size=1, max_size=3))
        rows.append(row)
    out = io.StringIO()
    out.write(",".join(columns) + "\n")
    for row in rows:
        if draw(st.booleans()):
            out.write(",".join(row) + "\n")
        else:
            csv.writer(out, lineterminator="\n").writerow(row)
    text = out.getvalue()
    return text[:-1] if draw(st.integers(0, 4)) == 0 else text


@st.composite
def edited_bundled(draw: st.DrawFn, which: str) -> str:
    """The bundled file with one to three random edits."""
    text = BUNDLED[which]
    for _ in range(draw(st.integers(1, 3))):
        edit = draw(st.sampled_from(["delete", "insert", "repeat", "swap", "field", "cut"]))
        at = draw(st.integers(0, len(text)))
        lines = text.split("\n")
        line = draw(st.integers(0, len(lines) - 1))
        if edit == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 40)) :]
        elif edit == "insert":
            text = text[:at] + draw(st.one_of(fields, models)) + text[at:]
        elif edit == "repeat":
            lines.insert(draw(st.integers(1, len(lines))), lines[line])
            text = "\n".join(lines)
        elif edit == "swap":
            other = draw(st.integers(0, len(lines) - 1))
            lines[line], lines[other] = lines[other], lines[line]
            text = "\n".join(lines)
        elif edit == "field":
            cells = lines[line].split(",")
            cells[draw(st.integers(0, len(cells) - 1))] = draw(fields)
            lines[line] = ",".join(cells)
            text = "\n".join(lines)
        else:
            text = text[:at]
    return text


# ---------------------------------------------------------------- oracles


def refused_well(exc: ProfileError, source: str) -> None:
    """One line naming the file, and the line unless it is a size limit."""
    message = str(exc)
    named = rf"{re.escape(source)}: (line \d+: |larger than |more than )"
    assert re.match(named, message), message
    assert "Traceback" not in message and len(message) < 600, message
    assert "\n" not in message and "\r" not in message, message


def valid_workload(w: Workload) -> None:
    assert w.model and w.model == w.model.strip() and len(w.model) <= 100
    assert isinstance(w.batch_size, int) and 1 <= w.batch_size <= 2**31 - 1
    assert isinstance(w.amp, bool)


def pairs_ok(pairs: dict[tuple[Workload, Workload], tuple[float, float]], text: str) -> None:
    assert len(pairs) <= text.count("\n") + 1
    for (a, b), speeds in pairs.items():
        valid_workload(a)
        valid_workload(b)
        assert a == b or (b, a) not in pairs
        assert all(math.isfinite(s) and 0.01 <= s <= 10 for s in speeds)
    model = InterferenceModel(pairs, [])
    assert 0 < model.unknown_speed <= 1
    for a, b in list(pairs)[:50]:
        for x, y in ((a, b), (b, a)):
            sa, sb = model.speeds(x, y)
            assert 0 < sa <= 1 and 0 < sb <= 1


def single_ok(profiles: list[WorkloadProfile], text: str) -> None:
    assert len(profiles) <= text.count("\n") + 1
    assert len({p.workload for p in profiles}) == len(profiles)
    for p in profiles:
        valid_workload(p.workload)
        assert 0 <= p.gpu_util <= 100 and 0 <= p.gpu_mem_mib <= 2**40
        assert p.sharing_score in (0, 1, 2)
    model = InterferenceModel({}, profiles)
    for a in profiles[:10]:
        for b in profiles[:10]:
            sa, sb = model.speeds(a.workload, b.workload)
            assert 0.5 <= sa <= 1 and sa == sb


READERS: dict[str, tuple[Callable[[str, str], Any], Callable[[Any, str], None]]] = {
    "pairs": (parse_pairs, pairs_ok),
    "single": (parse_single, single_ok),
}


def read_or_refuse(which: str, text: str, source: str) -> Any:
    """The reader's result after checking it, or None after checking the refusal."""
    reader, check = READERS[which]
    try:
        result = reader(text, source)
    except ProfileError as exc:
        refused_well(exc, source)
        return None
    check(result, text)
    return result


# ---------------------------------------------------------------- tests


@fuzz(200)
@given(text=profile_files(PAIR_COLUMNS))
def test_pair_files_are_read_within_bounds_or_refused_in_one_line(text: str) -> None:
    read_or_refuse("pairs", text, "colocate.csv")


@fuzz(200)
@given(text=profile_files(SINGLE_COLUMNS))
def test_single_files_are_read_within_bounds_or_refused_in_one_line(text: str) -> None:
    read_or_refuse("single", text, "single.csv")


@fuzz(60)
@given(text=edited_bundled("pairs"))
def test_edited_bundled_pairs_are_read_within_bounds_or_refused(text: str) -> None:
    read_or_refuse("pairs", text, "colocate_info.csv")


@fuzz(100)
@given(text=edited_bundled("single"))
def test_edited_bundled_single_is_read_within_bounds_or_refused(text: str) -> None:
    read_or_refuse("single", text, "single_data.csv")


@fuzz(100)
@given(
    which=st.sampled_from(["pairs", "single"]),
    text=st.one_of(profile_files(PAIR_COLUMNS), profile_files(SINGLE_COLUMNS)),
)
def test_the_row_limit_holds_for_any_file(
    monkeypatch: pytest.MonkeyPatch, which: str, text: str
) -> None:
    monkeypatch.setattr(interference, "MAX_PROFILE_ROWS", 3)
    result = read_or_refuse(which, text, "p.csv")
    assert result is None or len(result) <= 3
