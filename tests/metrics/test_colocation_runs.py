"""Co-location end to end: ``simulate`` runs of a canonical CSV naming workloads (model, batch
size, ``amp``), under ``lucid`` and under FIFO, their ``jobs.parquet`` and ``summary.json``,
``compare``'s co-location rows, ``--workloads lucid`` and the one-line errors of bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from dlsched.trace.io import read_parquet
from tests.analysis.run_dirs import invoke, ok, simulate, summary_of

# One GPU. MobileNetV3 bs32 and ResNet18 bs32 (fp32) share it under lucid: Lucid measured 0.983
# and 1.034 (taken as 1) for that pair, so ResNet18 ends at 1000 s and MobileNetV3 at 1017 s.
TRACE = (
    "job_id,submit_time,num_gpus,duration,application,batch_size,amp\n"
    "m,0,1,1000,MobileNetV3,32,false\nr,0,1,1000,ResNet18,32,0\n"
)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("colocation")
    (root / "pair.csv").write_text(TRACE)
    return root


def run(root: Path, name: str, *args: str) -> Path:
    out = root / name
    if not out.exists():
        simulate(out, "--trace", root / "pair.csv", "--cluster", "1x1", *args)
    return out


@pytest.fixture(scope="module")
def lucid(root: Path) -> Path:
    return run(
        root,
        "lucid",
        "--policy",
        "lucid",
        "--estimator",
        "noisy-oracle",
        "--policy-opt",
        "adaptive=false",
        "--policy-opt",
        "priority_ratio=1e9",
        "--restart-cost",
        "none",
    )


@pytest.fixture(scope="module")
def fifo(root: Path) -> Path:
    return run(root, "fifo", "--policy", "fifo")


def test_jobs_share_the_gpu_at_their_measured_speeds(lucid: Path) -> None:
    rows = {r["job_id"]: r for r in pq.read_table(lucid / "jobs.parquet").to_pylist()}
    assert rows["r"]["end_s"] == pytest.approx(1000.0)
    assert rows["m"]["end_s"] == pytest.approx(1017.0)
    assert rows["m"]["interference_s"] == pytest.approx(17.0)
    assert rows["m"]["colocated_s"] == pytest.approx(1000.0)
    block = summary_of(lucid)["colocation"]
    assert block["pairs"] == 1 and block["jobs_colocated"] == 2
    assert block["mean_shared_speed"] == pytest.approx(1 - 17 / 2000)


def test_a_policy_that_does_not_colocate_has_null_figures(fifo: Path) -> None:
    assert set(summary_of(fifo)["colocation"].values()) == {None}
    jobs = pq.read_table(fifo / "jobs.parquet")
    assert jobs.column("colocated_s").null_count == jobs.num_rows
    ends = sorted(jobs.column("end_s").to_pylist())
    assert ends == [1000.0, 2000.0]


def test_compare_shows_colocation_only_for_colocated_runs(lucid: Path, fifo: Path) -> None:
    rows = json.loads(ok(invoke("compare", lucid, fifo, "--format", "json")).output)
    assert [r["colocation.pairs"] for r in rows] == [1, None]
    assert "co-located pairs" in ok(invoke("compare", lucid, fifo)).output
    plain = json.loads(ok(invoke("compare", fifo, fifo, "--format", "json")).output)
    assert "colocation.pairs" not in plain[0]


def test_trace_convert_draws_workloads(root: Path) -> None:
    plain = root / "plain.csv"
    plain.write_text("job_id,submit_time,num_gpus,duration\na,0,1,10\nb,1,0,5\nc,2,2,7\n")
    out = root / "with-workloads.parquet"
    ok(invoke("trace", "convert", plain, "--out", out, "--workloads", "lucid", "--seed", "4"))
    table = read_parquet(out).table
    apps, amps = table.column("application").to_pylist(), table.column("amp").to_pylist()
    assert apps[1] is None and amps[1] is None  # a CPU-only job keeps no workload
    assert apps[0] is not None and apps[2] is not None
    assert amps[0] in (True, False) and table.column("batch_size")[0].as_py() in (32, 64, 128)
    again = root / "again.parquet"
    ok(invoke("trace", "convert", plain, "--out", again, "--workloads", "lucid", "--seed", "4"))
    assert read_parquet(again).table.equals(table)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--workloads", "alibaba"), "--workloads alibaba: expected one of lucid"),
        (("--policy-opt", "check_s=0"), "check_s must be positive"),
    ],
)
def test_bad_options_are_one_line(root: Path, args: tuple[str, ...], message: str) -> None:
    result = invoke(
        "simulate",
        "--trace",
        root / "pair.csv",
        "--cluster",
        "1x1",
        "--policy",
        "lucid",
        "--estimator",
        "lgbm",
        "--out",
        root / "bad",
        *args,
    )
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_a_bad_amp_value_names_file_line_and_field(root: Path) -> None:
    bad = root / "bad-amp.csv"
    bad.write_text("job_id,submit_time,num_gpus,duration,amp\na,0,1,10,maybe\n")
    result = invoke("trace", "validate", bad)
    assert result.exit_code != 0
    assert "bad-amp.csv:2" in result.output and "amp" in result.output
    assert "yes/no" in result.output
