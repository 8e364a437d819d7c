"""Property-based fuzzing of the file inputs: malformed trace rows and cluster descriptions.

A trace file is a canonical CSV header and rows whose fields are drawn from hostile text
(quotes, line breaks, commas, NUL, huge and non-finite numbers, non-ASCII digits). Reading it
either raises TraceError naming the file or accounts for every record: accepted rows plus one
error per rejected row equal the records read, and no record is lost (each non-blank line is
in one record, a record spanning lines being itself an error). ``trace validate`` and
``simulate`` agree on every file: validate says ok exactly when simulate runs, and neither
ends with anything but exit 0 or 2 (no traceback).

ElasticFlow files (both layouts, columns sometimes missing or extra, hostile fields) go
through the same accounting.

A cluster description is a shorthand or a TOML file with hostile counts and names: it either
parses within the documented size limits or raises ClusterFormatError (a ValueError), never
MemoryError, OverflowError or anything else.

``DLSCHED_FUZZ_EXAMPLES=N`` runs N examples per test instead of the CI default.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from dlsched.cli.main import app
from dlsched.cluster.errors import ClusterFormatError
from dlsched.cluster.limits import MAX_GPUS_PER_NODE, MAX_NODES, MAX_TOTAL_GPUS
from dlsched.cluster.parse import resolve_cluster
from dlsched.cluster.toml_io import parse_cluster_toml
from dlsched.trace import TraceError, read_trace
from tests.fuzz.strategies import fuzz, nasty_text

COLUMNS = ("job_id", "submit_time", "num_gpus", "duration", "user")

number_text = st.one_of(
    st.integers(-5, 10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1e308", "1e309", "-0", "0x10", "1_000", "\u0661", "", " 5 ", "2e10"]),
)
field = st.one_of(number_text, nasty_text, st.sampled_from(['"', '"a', 'a"b', '""', "\r"]))


@st.composite
def trace_files(draw: st.DrawFn) -> str:
    """A canonical CSV: sometimes well-quoted rows, sometimes raw text joined by commas."""
    out = io.StringIO()
    out.write(",".join(COLUMNS) + "\n")
    for i in range(draw(st.integers(0, 8))):
        row = [f"j{i}", draw(number_text), draw(number_text), draw(number_text), draw(field)]
        if draw(st.booleans()):
            row = [draw(field) if draw(st.integers(0, 4)) == 0 else v for v in row]
            out.write(",".join(v.replace("\x00", "") for v in row) + "\n")
        else:
            csv.writer(out, lineterminator="\n").writerow(row)
    return out.getvalue()


ELASTICFLOW_LAYOUTS = (
    "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration",
    "job_id,submit_time,iteration,model_name,ddl,batch_size,num_gpu,duration",
    "job_id,submit_time,iteration,model_name,ddl,batch_size,num_gpu,duration,best_effort",
    "job_id,submit_time,real_iteration,model_name,ddl,batch_size,num_gpu,real_duration,duration,"
    "iteration",
)
model_names = st.one_of(
    st.sampled_from(["resnet50", "gpt2", "deepspeech2", "resnet50_cifar10", "v1.0-x"]),
    st.sampled_from(["", "res net", "a/b", "m" * 65, "\u0661", "bert\x00"]),
    nasty_text,
)


@st.composite
def elasticflow_files(draw: st.DrawFn) -> str:
    """An ElasticFlow CSV of one of its layouts (sometimes with a column dropped or added, or
    without the final newline, as the ITP files): rows near valid ones with hostile fields."""
    columns = draw(st.sampled_from(ELASTICFLOW_LAYOUTS)).split(",")
    change = draw(st.integers(0, 9))
    if change == 0:
        columns.pop(draw(st.integers(0, len(columns) - 1)))
    elif change == 1:
        columns.append(draw(st.sampled_from(["deadline", "ddl", "submit_time", "x"])))
    out = io.StringIO()
    out.write(",".join(columns) + "\n")
    for i in range(draw(st.integers(0, 8))):
        submit = draw(st.integers(0, 10**7))
        good = {
            "job_id": f"j{i}",
            "submission_time": str(submit),
            "submit_time": str(submit),
            "num_iteration": str(draw(st.integers(1, 10**7))),
            "iteration": str(draw(st.integers(1, 10**7))),
            "real_iteration": "5",
            "model_name": "resnet50",
            "deadline": str(submit + draw(st.integers(-5, 10**5))),
            "ddl": str(submit + draw(st.integers(-5, 10**5))),
            "batch_size": str(draw(st.sampled_from([1, 32, 256, 0]))),
            "num_gpu": str(draw(st.sampled_from([1, 8, 64, 0]))),
            "duration": str(draw(st.integers(0, 10**6))),
            "real_duration": "5",
            "best_effort": draw(st.sampled_from(["0", "1", "2", "0.5", ""])),
        }
        row = [good.get(c, "1") for c in columns]
        if draw(st.integers(0, 2)) == 0:
            at = draw(st.integers(0, len(row) - 1))
            row[at] = draw(model_names) if columns[at] == "model_name" else draw(field)
        if draw(st.booleans()):
            out.write(",".join(v.replace("\x00", "") for v in row) + "\n")
        else:
            csv.writer(out, lineterminator="\n").writerow(row)
    text = out.getvalue()
    return text[:-1] if text.count("\n") > 1 and draw(st.booleans()) else text


def records_in(text: str) -> int:
    """Non-empty lines after the header, with the line ends CSV knows (one record each when no
    quoted field spans lines)."""
    return sum(1 for line in re.split(r"\r\n|\r|\n", text)[1:] if line)


def test_trace_rows_are_accepted_or_reported_never_lost(tmp_path: Path) -> None:
    seen = {"files": 0, "unreadable": 0, "rejected_rows": 0, "accepted_rows": 0}
    seen["elasticflow_rows"] = 0

    @fuzz(300)
    @given(text=st.one_of(trace_files(), elasticflow_files()))
    def one(text: str) -> None:
        path = tmp_path / "t.csv"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        seen["files"] += 1
        try:
            result = read_trace(path, skip_bad_rows=True)
        except TraceError as exc:
            assert str(exc).startswith(str(path)), str(exc)
            seen["unreadable"] += 1
            return
        assert len(result.trace) + len(result.errors) == result.rows_read
        # A record spanning lines is one error; every other non-blank line is one record.
        spans = [e for e in result.errors if "runs on to line" in e.reason]
        if spans:
            assert result.rows_read < records_in(text)
        else:
            assert result.rows_read == records_in(text)
        assert all(e.path == str(path) and e.line >= 2 for e in result.errors)
        seen["rejected_rows"] += len(result.errors)
        seen["accepted_rows"] += len(result.trace)
        seen["elasticflow_rows"] += len(result.trace) if result.format == "elasticflow" else 0

    one()
    print(f"trace fuzz: {seen}")
    assert seen["rejected_rows"] and seen["accepted_rows"] and seen["unreadable"]
    assert seen["elasticflow_rows"]


def test_validate_and_simulate_agree_and_never_crash(tmp_path: Path) -> None:
    runner = CliRunner()
    agreed = {"ok": 0, "refused": 0}

    @fuzz(25)
    @given(text=trace_files())
    def one(text: str) -> None:
        path = tmp_path / "t.csv"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        validate = runner.invoke(app, ["trace", "validate", str(path)])
        out = tmp_path / f"run{sum(agreed.values())}"
        simulate = runner.invoke(
            app, ["simulate", "--trace", str(path), "--cluster", "2x8", "--out", str(out)]
        )
        assert validate.exit_code in (0, 1, 2), validate.output
        assert simulate.exit_code in (0, 2), (simulate.output, simulate.exception)
        assert "Traceback" not in validate.output + simulate.output
        assert (validate.exit_code == 0) == (simulate.exit_code == 0), (
            validate.output,
            simulate.output,
        )
        agreed["ok" if simulate.exit_code == 0 else "refused"] += 1

    one()
    print(f"validate/simulate fuzz: {agreed}")


counts = st.one_of(
    st.integers(-2, 40),
    st.integers(0, 2**70),
    st.sampled_from([MAX_NODES, MAX_NODES + 1, MAX_GPUS_PER_NODE + 1, 10**12]),
)
toml_values = st.one_of(
    counts.map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda f: repr(f).replace("inf", "inf")),
    nasty_text.map(lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'),
    st.sampled_from(["true", "[]", '["a", "a"]', "{}", "1e400"]),
)


@st.composite
def cluster_files(draw: st.DrawFn) -> str:
    """Groups that are mostly well formed (so their sizes get checked), with hostile values
    and keys mixed in."""
    lines = ['name = "fuzz"']
    for _ in range(draw(st.integers(0, 3))):
        lines.append("[[nodes]]")
        lines.append(f"count = {draw(counts)}")
        lines.append(f"gpus = {draw(counts)}")
        for key in draw(st.sets(st.sampled_from(["count", "gpus", "gpu_type", "names", "x"]))):
            lines.append(f"{key} = {draw(toml_values)}")
    return "\n".join(lines) + "\n"


shorthands = st.one_of(
    st.lists(
        st.tuples(st.sampled_from(["", "", "v100:", "a b:", "\u0661:"]), counts, counts),
        min_size=1,
        max_size=3,
    ).map(lambda gs: ",".join(f"{t}{c}x{g}" for t, c, g in gs)),
    nasty_text,
)


def within_limits(nodes: int, gpus: int, per_node: int) -> bool:
    return nodes <= MAX_NODES and gpus <= MAX_TOTAL_GPUS and per_node <= MAX_GPUS_PER_NODE


@fuzz(300)
@given(text=cluster_files())
def test_cluster_files_parse_within_limits_or_are_refused(text: str) -> None:
    try:
        spec = parse_cluster_toml(text, "fuzz.toml")
    except ClusterFormatError as exc:
        assert str(exc).startswith("fuzz.toml"), str(exc)
        return
    gpus = [n.gpus for n in spec.nodes]
    assert within_limits(len(gpus), sum(gpus), max(gpus, default=0))


@fuzz(300)
@given(text=shorthands)
def test_cluster_shorthands_parse_within_limits_or_are_refused(text: str) -> None:
    try:
        spec = resolve_cluster(text)
    except ValueError:
        return
    gpus = [n.gpus for n in spec.nodes]
    assert within_limits(len(gpus), sum(gpus), max(gpus, default=0))
