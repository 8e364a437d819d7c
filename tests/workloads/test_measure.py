"""Throughput tables from live runs' status files."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from dlsched.workloads.measure import ThroughputTable, collect_throughputs, main
from dlsched.workloads.status import StatusError, write_status
from tests.workloads.test_contract_files import STATUS


def _write(root: Path, name: str, **fields: object) -> Path:
    path = root / name / "status.json"
    path.parent.mkdir(parents=True)
    write_status(path, replace(STATUS, **fields))  # type: ignore[arg-type]
    return path


def test_collect_averages_per_model_gpus_and_batch(tmp_path: Path) -> None:
    files = [
        _write(tmp_path, "a", num_gpus=1, batch_size=32, samples_per_s=300.0),
        _write(tmp_path, "b", num_gpus=1, batch_size=32, samples_per_s=320.0),
        _write(tmp_path, "c", num_gpus=4, batch_size=32, samples_per_s=400.0),
        _write(tmp_path, "d", num_gpus=1, batch_size=32, samples_per_s=0.0),  # not measured
        _write(tmp_path, "e", num_gpus=1, batch_size=32, samples_per_s=900.0, model=""),
    ]
    table = collect_throughputs(files)
    assert dict(table.points) == {
        ("resnet-small", 1, 32): pytest.approx(310.0),
        ("resnet-small", 4, 32): 400.0,
    }


def test_unmeasured_gpu_counts_interpolate_without_extrapolating() -> None:
    table = ThroughputTable({("m", 1, 32): 300.0, ("m", 4, 32): 420.0, ("m", 8, 32): 500.0})
    assert table.samples_per_s("m", 2, 32) == pytest.approx(340.0)
    assert table.samples_per_s("m", 6, 32) == pytest.approx(460.0)
    assert table.samples_per_s("m", 16, 32) == 500.0
    assert table.duration_s("m", 4, 32, samples=4200) == pytest.approx(10.0)
    with pytest.raises(KeyError, match="no throughput measured for m at batch 64"):
        table.samples_per_s("m", 1, 64)


def test_tables_round_trip_and_bad_files_are_named(tmp_path: Path) -> None:
    table = ThroughputTable({("m", 1, 32): 300.25, ("n", 2, 8): 99.0})
    path = tmp_path / "t.json"
    table.write(path)
    assert dict(ThroughputTable.read(path).points) == dict(table.points)
    path.write_text('[{"model": "m", "gpus": 1, "batch_size": 32}]')
    with pytest.raises(ValueError, match=r"t.json: row 0: expected"):
        ThroughputTable.read(path)
    path.write_text('[{"model": "m", "gpus": 1, "batch_size": 32, "samples_per_s": -1}]')
    with pytest.raises(ValueError, match=r"t.json: throughput of .* must be > 0"):
        ThroughputTable.read(path)


def test_the_command_collects_a_run_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path / "run", "j1", samples_per_s=250.0)
    assert main([str(tmp_path / "run"), "--out", str(tmp_path / "t.json")]) == 0
    assert "resnet-small" in capsys.readouterr().out
    assert dict(ThroughputTable.read(tmp_path / "t.json").points) == {
        ("resnet-small", 2, 16): 250.0
    }
    (tmp_path / "run" / "j1" / "status.json").write_text("[]")
    assert main([str(tmp_path / "run")]) == 2
    with pytest.raises(StatusError):
        collect_throughputs([tmp_path / "run" / "j1" / "status.json"])
