"""Bundled traces: present, small, readable in their formats, faithful slices of the sources."""

from __future__ import annotations

import pytest

from dlsched.trace import bundled_trace_names, bundled_trace_path, read_trace
from tests.trace.helpers import TRACES, requires_traces

EXPECTED = {
    "philly_jobs_2000": ("philly", 2000),
    "vc_0e4a51": ("gavel-philly", 990),
    "pollux_workload-6": ("pollux", 160),
    "openb_pod_list_default_500": ("alibaba-2023", 500),
    "philly_2017-10-01_2017-12-01": ("canonical", 68510),
    "elasticflow_100jobs_1500lam": ("elasticflow", 100),
    "elasticflow_200jobs_900lam_0.5": ("elasticflow", 200),
    "elasticflow_elasticVpollux_e": ("elasticflow", 195),
}


def test_names() -> None:
    assert set(bundled_trace_names()) == set(EXPECTED)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_each_reads_cleanly(name: str) -> None:
    result = read_trace(bundled_trace_path(name))
    assert (result.format, result.rows_read) == EXPECTED[name]
    assert result.errors == ()


def test_total_size_is_small() -> None:
    total = sum(bundled_trace_path(name).stat().st_size for name in bundled_trace_names())
    assert total < 1_000_000


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="vc_0e4a51"):
        bundled_trace_path("nope")


@requires_traces
@pytest.mark.parametrize(
    ("name", "source"),
    [
        ("philly_jobs_2000", "philly/philly_jobs.csv"),
        ("vc_0e4a51", "philly-gavel/vc_0e4a51.csv"),
        ("pollux_workload-6", "pollux-workloads/workloads/workload-6.csv"),
        ("openb_pod_list_default_500", "alibaba-gpu-2023/openb_pod_list_default.csv"),
    ],
)
def test_slices_are_the_first_lines_of_their_source(name: str, source: str) -> None:
    bundled = bundled_trace_path(name).read_bytes()
    assert (TRACES / source).read_bytes().startswith(bundled)


@requires_traces
@requires_traces
@pytest.mark.parametrize(
    ("name", "source"),
    [
        ("elasticflow_100jobs_1500lam", "elasticflow/traces/generated/100jobs_1500lam.csv"),
        ("elasticflow_200jobs_900lam_0.5", "elasticflow/traces/generated/200jobs_900lam_0.5.csv"),
        ("elasticflow_elasticVpollux_e", "elasticflow/traces/artifact/elasticVpollux_e.csv"),
    ],
)
def test_whole_copies_equal_their_source(name: str, source: str) -> None:
    assert bundled_trace_path(name).read_bytes() == (TRACES / source).read_bytes()


def test_the_elasticflow_license_is_bundled_beside_its_traces() -> None:
    license_text = bundled_trace_path("elasticflow_100jobs_1500lam").parent / "LICENSE-ElasticFlow"
    assert "Apache License" in license_text.read_text(encoding="utf-8")


@requires_traces
def test_philly_window_is_the_source_window() -> None:
    from dlsched.trace.transforms import window_by_dates

    source = read_trace(TRACES / "philly" / "philly_jobs.csv").trace
    expected = window_by_dates(source, "2017-10-01", "2017-12-01")
    bundled = read_trace(bundled_trace_path("philly_2017-10-01_2017-12-01")).trace
    assert bundled.table.equals(expected.table)
    assert bundled.origin_unix == expected.origin_unix
