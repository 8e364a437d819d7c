"""Regressions for the hostile files of issue 27: each once hung dlsched, exhausted memory or
ended in a traceback. Each is now refused when read, in one line naming the file, the line
(or document) and the field, exit code 2 from the CLI, nothing written. No wall-clock
asserts: complexity is checked by counting operations, hangs by bounding what is read."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from dlsched import safe_load
from dlsched.cli.main import app
from dlsched.cluster.errors import ClusterFormatError
from dlsched.cluster.limits import MAX_GROUPS
from dlsched.cluster.toml_io import parse_cluster_toml
from dlsched.safe_load import MAX_LINE_CHARS, InputError, LongLine, read_line
from dlsched.service.api.auth import TokenFileError
from dlsched.service.api.tenants import read_tokens
from dlsched.serving.readers.read import read_requests
from dlsched.tenancy import manifests
from dlsched.tenancy.errors import TenancyError
from dlsched.tenancy.manifests import read_manifests
from dlsched.tenancy.model import Cohort
from dlsched.trace import TraceError, read_trace
from dlsched.trace.bundled import bundled_trace_path

TRACE = bundled_trace_path("philly_jobs_2000")
FLAVOR = "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\n"


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def one_error_line(result: Result) -> str:
    """The one ``error:`` line of a refused command (exit 2, no traceback)."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1, result.output
    return errors[0]


def cluster_queue(quota: str) -> str:
    return (
        "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq}\n"
        "spec:\n  namespaceSelector: {}\n  resourceGroups:\n"
        '  - coveredResources: ["nvidia.com/gpu"]\n    flavors:\n    - name: f\n'
        f"      resources:\n      - name: nvidia.com/gpu\n        nominalQuota: {quota}\n"
    )


def alias_bomb() -> str:
    """The billion laughs in YAML: nine levels of nine aliases, about 2 KB."""
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, 10):
        refs = ", ".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- manifests


def test_an_alias_bomb_in_manifests_fails_at_its_first_anchor(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(FLAVOR + "---\n" + alias_bomb())
    assert bomb.stat().st_size < 2500
    with pytest.raises(TenancyError, match=r"bomb.yaml:5: YAML anchor 'a0': anchors and aliases"):
        read_manifests(bomb)
    out = tmp_path / "run"
    line = one_error_line(
        invoke("simulate", "--trace", TRACE, "--cluster", "philly-vcs", "--queues", bomb,
               "--out", out, "--no-progress")
    )  # fmt: skip
    assert "bomb.yaml:5" in line and "anchors and aliases are not accepted" in line
    assert not out.exists()


@pytest.mark.parametrize("quota", ["1e400", ".inf", "-.inf", ".nan", "9" * 5000, '"1e999Ki"'])
def test_an_infinite_or_huge_quota_is_refused_when_read(tmp_path: Path, quota: str) -> None:
    path = tmp_path / "q.yaml"
    path.write_text(FLAVOR + cluster_queue(quota))
    with pytest.raises(TenancyError) as info:
        read_manifests(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(path)), message
    assert "finite" in message or "characters" in message, message


def test_a_finite_quota_near_the_bound_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "q.yaml"
    path.write_text(FLAVOR + cluster_queue("1e18") + "---\n" + cluster_queue("1").replace(
        "name: cq", "name: cq2"))  # fmt: skip
    assert read_manifests(path).cluster_queues["cq"] is not None


def test_infinite_quota_in_simulate_is_exit_2_before_the_run(tmp_path: Path) -> None:
    path = tmp_path / "q.yaml"
    path.write_text(FLAVOR + cluster_queue(".inf"))
    out = tmp_path / "run"
    line = one_error_line(
        invoke("simulate", "--trace", TRACE, "--cluster", "philly-vcs", "--queues", path,
               "--out", out, "--no-progress")
    )  # fmt: skip
    assert "nominalQuota" in line and "finite" in line
    assert not out.exists()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: 1\nb:\n  c: 2\n  c: 3\n", "d.yaml:4: c: duplicate key"),
        ("a: 1\na: 2\n", "d.yaml:2: a: duplicate key"),
        ("a: [" * 100 + "]" * 100 + "\n", "nested deeper than 64 levels"),
    ],
)
def test_duplicate_keys_and_deep_nesting_in_yaml_are_refused(text: str, expected: str) -> None:
    with pytest.raises(InputError, match=expected):
        safe_load.load_yaml_documents(text, "d.yaml")


def test_duplicate_keys_deep_in_a_manifest_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text(FLAVOR.replace("metadata: {name: f}", "metadata: {name: f, name: g}"))
    with pytest.raises(TenancyError, match=r"dup.yaml:3: name: duplicate key"):
        read_manifests(path)


class CountingCohorts(Mapping[str, Cohort]):
    """Cohorts that count how often a parent is looked up."""

    def __init__(self, cohorts: dict[str, Cohort]) -> None:
        self.cohorts = cohorts
        self.lookups = 0

    def __getitem__(self, name: str) -> Cohort:
        self.lookups += 1
        return self.cohorts[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.cohorts)

    def __len__(self) -> int:
        return len(self.cohorts)


@pytest.mark.parametrize("n", [200, 2000])
def test_the_cohort_cycle_check_is_linear(n: int) -> None:
    chain = {f"c{i}": Cohort(f"c{i}", f"c{i + 1}" if i + 1 < n else None) for i in range(n)}
    counting = CountingCohorts(chain)
    manifests._check_no_cycle("m.yaml", counting)
    assert counting.lookups <= 2 * n  # the old check walked each chain: n^2 / 2 lookups
    cyclic = {**chain, f"c{n - 1}": Cohort(f"c{n - 1}", "c0")}
    counting = CountingCohorts(cyclic)
    with pytest.raises(TenancyError, match=r"m\.yaml: cohorts form a cycle: c0 -> c1 -> "):
        manifests._check_no_cycle("m.yaml", counting)
    assert counting.lookups <= 2 * n


# ---------------------------------------------------------------- request traces


def test_a_nan_mooncake_timestamp_is_a_row_error(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    rows = ['{"timestamp": NaN, "input_length": 5, "output_length": 3}',
            '{"timestamp": 1000, "input_length": 5, "output_length": 3}',
            '{"timestamp": Infinity, "input_length": 5, "output_length": 3}']  # fmt: skip
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(TraceError) as info:
        read_requests(path)
    assert f"{path}:1: timestamp: expected a finite number, got NaN" in str(info.value)
    assert f"{path}:3: timestamp: expected a finite number, got Infinity" in str(info.value)
    result = read_requests(path, skip_bad_rows=True)
    assert len(result.trace) == 1 and len(result.errors) == 2
    out = tmp_path / "run"
    line = one_error_line(invoke("serve-sim", str(path), "--out", str(out)))
    assert "2 rejected" in line or "rejected" in line, line
    assert not out.exists()


def test_a_year_9999_azure_row_is_refused_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "azure.csv"
    path.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"
        "9999-11-16 18:15:47.1,374,44\n1999-12-31 23:59:59,1,1\n"
    )
    with pytest.raises(TraceError) as info:
        read_requests(path)
    assert f"{path}:3: TIMESTAMP: date '9999-11-16 18:15:47.1' is outside 2000-01-01" in str(
        info.value
    )
    assert f"{path}:4: TIMESTAMP: date" in str(info.value)
    kept = read_requests(path, skip_bad_rows=True)
    assert len(kept.trace) == 1
    assert max(kept.trace.column("arrival_time").to_pylist()) == 0.0


def test_a_far_date_in_a_job_trace_is_flagged_by_validate(tmp_path: Path) -> None:
    path = tmp_path / "helios.csv"
    path.write_text(
        "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,"
        "duration,queue\n"
        "1,u,v,1,1,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:01,2020-04-01 00:01:01,"
        "60,1\n"
        "2,u,v,1,1,1,COMPLETED,2999-04-01 00:00:00,2999-04-01 00:00:01,2999-04-01 00:01:01,"
        "60,1\n"
    )
    r = invoke("trace", "validate", path)
    assert r.exit_code == 1, r.output
    assert f"{path}:3: submit_time: date '2999-04-01 00:00:00' is outside" in r.output


@pytest.mark.parametrize("kind", ["canonical", "azure", "burstgpt", "mooncake"])
def test_a_5000_digit_number_names_file_and_line_and_is_skippable(
    tmp_path: Path, kind: str
) -> None:
    huge = "9" * 5000
    files = {
        "canonical": ("t.csv", f"job_id,submit_time,num_gpus\nj1,0,1\nj2,{huge},1\n", 3),
        "azure": ("a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                  f"2023-11-16 18:15:46,3,4\n2023-11-16 18:15:47,{huge},4\n", 3),
        "burstgpt": ("b.csv", "Timestamp,Model,Request tokens,Response tokens\n"
                     f"0,m,3,4\n{huge},m,3,4\n", 3),
        "mooncake": ("m.jsonl", '{"timestamp": 0, "input_length": 3, "output_length": 4}\n'
                     f'{{"timestamp": {huge}, "input_length": 3, "output_length": 4}}\n', 2),
    }  # fmt: skip
    name, text, line = files[kind]
    path = tmp_path / name
    path.write_text(text)
    read = read_trace if kind == "canonical" else read_requests
    with pytest.raises(TraceError) as info:
        read(path)
    assert f"{path}:{line}: " in str(info.value) and "5,000 characters" in str(info.value)
    assert huge not in str(info.value)
    result = read(path, skip_bad_rows=True)
    assert len(result.trace) == 1 and len(result.errors) == 1
    assert result.errors[0].line == line


class RecordingText(io.StringIO):
    """Text whose ``readline`` calls are recorded (the size asked, the length given)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.calls: list[tuple[int, int]] = []

    def readline(self, size: int = -1) -> str:  # type: ignore[override]
        got = super().readline(size)
        self.calls.append((size, len(got)))
        return got


def test_an_over_long_line_is_skipped_in_bounded_pieces() -> None:
    handle = RecordingText("short\n" + "x" * (3 * MAX_LINE_CHARS + 5) + "\nafter\n")
    assert read_line(handle) == "short\n"
    long = read_line(handle)
    assert long == LongLine(3 * MAX_LINE_CHARS + 6)
    assert read_line(handle) == "after\n"
    assert all(0 < size <= MAX_LINE_CHARS + 1 for size, _ in handle.calls)


def test_an_over_long_jsonl_line_is_a_row_error(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    good = '{"timestamp": 0, "input_length": 3, "output_length": 4}\n'
    path.write_text(good + '{"timestamp": "' + "x" * (MAX_LINE_CHARS + 10) + '"}\n' + good)
    result = read_requests(path, skip_bad_rows=True)
    assert len(result.trace) == 2
    assert [(e.line, e.field) for e in result.errors] == [(2, "(row)")]
    assert "characters (the limit is 1,048,576)" in result.errors[0].reason


def test_an_over_long_csv_line_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("job_id,submit_time,num_gpus\nj1,0,1\nj2,0," + "1" * (MAX_LINE_CHARS + 1))
    with pytest.raises(TraceError, match=rf"{path}:3: a line of 1,048,58\d characters"):
        read_trace(path)


# ---------------------------------------------------------------- TOML, JSON, cluster files


def deep_toml(levels: int) -> str:
    return "a = " + "[" * levels + "1" + "]" * levels + "\n"


@pytest.mark.parametrize(
    "text",
    [deep_toml(100_000), "x = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n",
     ".".join(["k"] * 200) + " = 1\n"],
)  # fmt: skip
def test_deeply_nested_toml_is_one_line(text: str) -> None:
    with pytest.raises(InputError, match="nested deeper than 64 levels") as info:
        safe_load.load_toml(text, "deep.toml")
    assert "\n" not in str(info.value)


def test_deeply_nested_json_is_one_line() -> None:
    with pytest.raises(InputError, match=r"deep\.json: nested deeper than 64 levels"):
        safe_load.load_json("[" * 100_000 + "]" * 100_000, "deep.json")
    assert safe_load.load_json("[" * 60 + "]" * 60, "ok.json") is not None


def test_a_deep_cluster_file_is_exit_2_one_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.toml"
    path.write_text('name = "c"\n' + deep_toml(50_000))
    line = one_error_line(invoke("simulate", "--trace", TRACE, "--cluster", path,
                                 "--out", tmp_path / "run", "--no-progress"))  # fmt: skip
    assert f"{path}: nested deeper than 64 levels" in line
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("value", "expected"),
    [("nan", "expected a finite number"), ("inf", "expected a finite number"),
     ("-inf", "expected a finite number"), ("1e400", "expected a finite number"),
     ("9" * 200, "an integer beyond"), ("9" * 5000, ":4: a number of more than 100 digits")],
)  # fmt: skip
def test_non_finite_and_huge_numbers_in_a_cluster_file(value: str, expected: str) -> None:
    text = f'name = "c"\n[[nodes]]\ncount = 1\ngpus = {value}\n'
    with pytest.raises(ClusterFormatError, match=expected) as info:
        parse_cluster_toml(text, "c.toml")
    assert str(info.value).startswith("c.toml") and "\n" not in str(info.value)


def test_a_million_group_cluster_file_is_refused_before_it_is_parsed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def never(*_: object) -> None:
        raise AssertionError("the file was parsed")

    monkeypatch.setattr("dlsched.cluster.toml_io.load_toml", never)
    headers = 'name = "c"\n' + "[[nodes]]\ncount = 1\ngpus = 1\n" * 1_000_000
    with pytest.raises(ClusterFormatError, match=rf"c.toml:{3 * MAX_GROUPS + 2}: nodes: more"):
        parse_cluster_toml(headers, "c.toml")
    inline = 'name = "c"\nnodes = [' + "{count = 1, gpus = 1}, " * 1_000_000 + "]\n"
    with pytest.raises(ClusterFormatError, match=r"c.toml:2: nodes: more than 10,000 groups"):
        parse_cluster_toml(inline, "c.toml")
    names = 'name = "c"\n[[nodes]]\ngpus = 1\nnames = [' + '"{x}", ' * (MAX_GROUPS + 1) + "]\n"
    with pytest.raises(AssertionError, match="parsed"):  # braces in strings are not groups
        parse_cluster_toml(names, "c.toml")


@pytest.mark.parametrize(
    ("name", "text", "reader_error"),
    [
        ("cluster.toml", 'name = "c"\nnodez = 1\n', "unknown key 'nodez'"),
        ("grid.toml", "[grid]\npolicy = ['fifo']\n[extra]\n", r"expected one \[grid\] table"),
        ("map.toml", 'default = "a/b"\nmystery = 1\n', "unknown key 'mystery'"),
    ],
)
def test_unknown_top_level_keys_are_refused(
    tmp_path: Path, name: str, text: str, reader_error: str
) -> None:
    from dlsched.cluster.toml_io import read_cluster_toml
    from dlsched.sweep.grid import load_grid
    from dlsched.tenancy.queue_map import read_queue_map

    path = tmp_path / name
    path.write_text(text)
    reader = {"cluster.toml": read_cluster_toml, "grid.toml": load_grid,
              "map.toml": read_queue_map}[name]  # fmt: skip
    with pytest.raises(ValueError, match=reader_error):
        reader(path)


def test_a_deep_run_config_is_one_line(tmp_path: Path) -> None:
    from dlsched.analysis.run_labels import read_config

    (tmp_path / "config.json").write_text(json.dumps({"sim": {"policy": "fifo"}})[:-1]
                                          + ', "x": ' + "[" * 5000 + "]" * 5000 + "}")  # fmt: skip
    with pytest.raises(ValueError, match="nested deeper than 64 levels"):
        read_config(tmp_path)


# ---------------------------------------------------------------- tenant names


def tokens_file(tmp_path: Path, *names: str) -> Path:
    path = tmp_path / "tokens.toml"
    tables = "".join(
        f'\n[tenants."{n}"]\ntoken = "tenant-token-{i:04d}-abcdefgh"\nqueues = ["q"]\n'
        for i, n in enumerate(names)
    )
    path.write_text(f'admin_token = "admin-token-0123456789abcdef"\n{tables}')
    path.chmod(0o600)
    return path


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (("admin",), "'admin' names the admin"),
        (("ADMIN",), "'admin' names the admin"),
        (("ａｄｍｉｎ",), "'admin' names the admin"),
        (("",), "an empty name"),
        (("  ",), "an empty name"),
        ((" team",), "spaces around the name"),
        (("team\u200d-a",), "control, format or separator character"),
        (("team\\u0000a",), "control, format or separator character"),
        (("team-a", "Team-A"), "looks like tenant 'team-a'"),
        (("team-a", "ｔｅａｍ-ａ"), "looks like tenant 'team-a'"),
        (("Straße", "STRASSE"), "looks like tenant 'Straße'"),
        (("x" * 65,), "a name of 65 characters"),
    ],
)
def test_tenant_names_are_not_admin_empty_or_lookalikes(
    tmp_path: Path, names: tuple[str, ...], expected: str
) -> None:
    path = tokens_file(tmp_path, *names)
    with pytest.raises(TokenFileError, match=expected) as info:
        read_tokens(path)
    assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)


def test_distinct_tenant_names_are_accepted(tmp_path: Path) -> None:
    tokens = read_tokens(tokens_file(tmp_path, "team-a", "team-b", "équipe c"))
    assert [p.tenant for _, p in tokens.tenants] == ["team-a", "team-b", "équipe c"]
