"""Request-trace readers: the bundled Azure slices, BurstGPT, Mooncake and dlsched's own CSV,
and every kind of bad input reported as file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlsched.serving.bundled import bundled_requests_path
from dlsched.serving.readers.read import is_request_file, read_requests, write_requests_csv
from dlsched.serving.requests import RequestSpec, RequestTrace
from dlsched.trace.errors import TraceError


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_bundled_azure_code_reads_with_origin_and_relative_times() -> None:
    result = read_requests(bundled_requests_path("azure_code_3000"))
    assert result.format == "azure-llm"
    assert len(result.trace) == 3000 == result.rows_read
    times, prompts, outputs = result.trace.arrays()
    assert times[0] == 0.0
    assert (times[1:] >= times[:-1]).all()
    # First row of the file: 2023-11-16 18:17:03.9799600, 4808 prompt, 10 output tokens.
    assert result.trace.origin_unix == pytest.approx(1700158623.97996)
    assert (prompts[0], outputs[0]) == (4808, 10)
    assert result.trace.column("model").null_count == 3000


def test_azure_rejects_bad_rows_naming_file_line_and_column(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "az.csv",
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:17:03.9799600,4808,10\n"
        "2023-11-16 18:17:04.5,-3,8\n"
        "yesterday,10,8\n"
        "2023-11-16 18:17:05.1,10,0\n",
    )
    with pytest.raises(TraceError) as err:
        read_requests(path)
    text = str(err.value)
    assert f"{path}: 3 of 4 rows rejected" in text
    assert f"{path}:3: ContextTokens" in text
    assert f"{path}:4: TIMESTAMP" in text
    assert f"{path}:5: GeneratedTokens" in text
    kept = read_requests(path, skip_bad_rows=True)
    assert len(kept.trace) == 1 and len(kept.errors) == 3


def test_burstgpt_keeps_model_and_log_type_and_checks_total(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "burst.csv",
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
        "5,ChatGPT,472,18,490,Conversation log\n"
        "0.5,GPT-4,1000,200,1200,API log\n"
        "7,GPT-4,10,5,99,API log\n",
    )
    with pytest.raises(TraceError, match=r"burst.csv:4: Total tokens: 99 is not"):
        read_requests(path)
    result = read_requests(path, skip_bad_rows=True)
    assert result.format == "burstgpt"
    rows = list(result.trace.requests())
    assert rows == [
        RequestSpec(0.5, 1000, 200, "GPT-4", None, "API log"),
        RequestSpec(5.0, 472, 18, "ChatGPT", None, "Conversation log"),
    ]


def test_burstgpt_failed_request_with_no_response_is_rejected(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "b.csv",
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
        "1,ChatGPT,10,0,10,Conversation log\n",
    )
    with pytest.raises(TraceError, match=r"b.csv:2: Response tokens: 0 tokens"):
        read_requests(path)


def test_mooncake_jsonl_times_in_milliseconds_and_errors_by_line(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "mc.jsonl",
        '{"timestamp": 0, "input_length": 6955, "output_length": 52, "hash_ids": [0, 1]}\n'
        "\n"
        '{"timestamp": 2500, "input_length": 100, "output_length": 3, "hash_ids": []}\n'
        '{"timestamp": 3000, "input_length": 1.5, "output_length": 3}\n'
        '{"timestamp": 3000, "input_length": 10, "output_length": 3, "hash_ids": ["a"]}\n'
        "[1, 2]\n"
        "{not json\n",
    )
    with pytest.raises(TraceError) as err:
        read_requests(path)
    text = str(err.value)
    assert "4 of 6 rows rejected" in text
    assert "mc.jsonl:4: input_length: not an integer" in text
    assert "mc.jsonl:5: hash_ids: expected a list of integers" in text
    assert "mc.jsonl:6: (row): expected a JSON object" in text
    assert "mc.jsonl:7: (row): not JSON" in text
    result = read_requests(path, skip_bad_rows=True)
    assert result.format == "mooncake"
    times, prompts, outputs = result.trace.arrays()
    assert times.tolist() == [0.0, 2.5]
    assert prompts.tolist() == [6955, 100] and outputs.tolist() == [52, 3]


def test_file_level_errors_are_one_line_trace_errors(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such file"):
        read_requests(tmp_path / "missing.csv")
    with pytest.raises(TraceError, match="no such file"):
        read_requests(tmp_path / "missing.jsonl")
    empty = _write(tmp_path, "empty.jsonl", "\n")
    with pytest.raises(TraceError, match="no request"):
        read_requests(empty)
    jobs = _write(tmp_path, "jobs.csv", "job_id,submit_time,num_gpus\n1,0,1\n")
    with pytest.raises(TraceError, match=r"jobs.csv: not a request trace: columns job_id"):
        read_requests(jobs)
    with pytest.raises(TraceError, match="unknown request format 'nope'"):
        read_requests(jobs, format="nope")
    assert not is_request_file(jobs)
    assert is_request_file(bundled_requests_path("azure_conv_5000"))


def test_canonical_csv_round_trip_and_no_overwrite_of_foreign_files(tmp_path: Path) -> None:
    trace = RequestTrace.from_requests(
        [RequestSpec(2.0, 100, 5, "llama2-70b", "t1", "chat"), RequestSpec(1.0, 50, 1)]
    )
    out = write_requests_csv(trace, tmp_path / "r.csv")
    back = read_requests(out)
    assert back.format == "requests"
    assert list(back.trace.requests()) == list(trace.requests())
    with pytest.raises(ValueError, match="already exists"):
        write_requests_csv(trace, out)
    write_requests_csv(trace, out, force=True)
    foreign = _write(tmp_path, "notes.csv", "a,b\n1,2\n")
    with pytest.raises(ValueError, match="not a request trace"):
        write_requests_csv(trace, foreign, force=True)
    assert foreign.read_text() == "a,b\n1,2\n"
