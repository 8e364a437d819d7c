"""``dlsched trace validate`` knows request traces: an Azure LLM file is read as format
``azure-llm`` (not "unrecognized header"), a Mooncake ``.jsonl`` by its suffix, each rejected
row reported as file:line: field, and a request format may be given with ``--format``."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from dlsched.cli.main import app
from dlsched.serving.bundled import bundled_requests_path


def _validate(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["trace", "validate", *[str(a) for a in args]])
    return result.exit_code, result.output


def test_a_bundled_request_trace_is_ok() -> None:
    path = bundled_requests_path("azure_code_3000")
    code, out = _validate(path)
    assert code == 0, out
    assert f"{path}: ok: format azure-llm, 3000 rows read, 3000 accepted, 0 rejected" in out


def test_bad_request_rows_are_listed_by_line(tmp_path: Path) -> None:
    azure = tmp_path / "az.csv"
    azure.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:17:03.9799600,4808,10\n"
        "2023-11-16 18:17:04.5,-3,8\n"
    )
    mooncake = tmp_path / "mc.jsonl"
    mooncake.write_text(
        '{"timestamp": 0, "input_length": 6955, "output_length": 52, "hash_ids": [0, 1]}\n'
        '{"timestamp": 3000, "input_length": 1.5, "output_length": 3}\n'
    )
    code, out = _validate(azure, mooncake)
    assert code == 1
    assert f"{azure}: FAILED: format azure-llm, 2 rows read, 1 accepted, 1 rejected" in out
    assert f"{azure}:3: ContextTokens" in out
    assert f"{mooncake}: FAILED: format mooncake, 2 rows read, 1 accepted, 1 rejected" in out
    assert f"{mooncake}:2: input_length: not an integer" in out


def test_a_request_format_may_be_given_and_a_wrong_one_is_a_failed_check(tmp_path: Path) -> None:
    path = bundled_requests_path("azure_code_3000")
    code, out = _validate("--format", "azure-llm", path)
    assert code == 0, out
    code, out = _validate("--format", "burstgpt", path)
    assert code == 1 and "header does not fit format burstgpt" in out
    code, out = _validate("--format", "nope", path)
    assert code == 2 and "known: philly" in out and "mooncake" in out
    header_only = tmp_path / "h.csv"
    header_only.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n")
    code, out = _validate(header_only)
    assert code == 1 and "no request rows (the file holds a header only)" in out


def test_convert_writes_a_request_trace_as_dlscheds_request_csv(tmp_path: Path) -> None:
    from dlsched.serving.readers.read import read_requests

    source = bundled_requests_path("azure_code_3000")
    out = tmp_path / "requests.csv"
    runner = CliRunner()
    r = runner.invoke(app, ["trace", "convert", str(source), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "azure-llm, 3000 rows read, 0 rejected, 3000 written" in r.output
    back, original = read_requests(out), read_requests(source)
    assert back.format == "requests" and len(back.trace) == len(original.trace)
    assert back.trace.column("prompt_tokens").to_pylist() == (
        original.trace.column("prompt_tokens").to_pylist()
    )
    for args, message in (
        (["--out", str(tmp_path / "r.parquet")], "name the output .csv"),
        (["--out", str(tmp_path / "s.csv"), "--subsample", "0.5"], "--subsample: job selections"),
        (["--out", str(source), "--force"], "is an input of this command"),
    ):
        r = runner.invoke(app, ["trace", "convert", str(source), *args])
        assert r.exit_code == 2 and message in r.output, (args, r.output)
        assert "Traceback" not in r.output
