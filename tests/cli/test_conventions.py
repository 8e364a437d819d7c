"""The command-line conventions of the README (lists, one value where one thing runs, --trace
everywhere, messages in the options' terms) and the smaller first-hour items of issue 14:
sweep figures, listings, progress when piped, a failed sweep leaving nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from dlsched.cli.main import app
from dlsched.trace.bundled import bundled_trace_path

VC_SLICE = bundled_trace_path("vc_0e4a51")
PHILLY_2000 = bundled_trace_path("philly_jobs_2000")


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def test_a_list_is_the_option_repeated_or_comma_separated(tmp_path: Path) -> None:
    base = ("sweep", "--trace", VC_SLICE, "--cluster", "32x8", "--workers", "1", "--no-progress")
    commas = invoke(*base, "--policy", "fifo,sjf", "--seed", "0,1", "--out", tmp_path / "a")
    repeated = invoke(
        *base, "--policy", "fifo", "--policy", "sjf", "--seed", "0", "--seed", "1",
        "--out", tmp_path / "b",
    )  # fmt: skip
    assert commas.exit_code == repeated.exit_code == 0, commas.output + repeated.output
    assert "ran 4 cells" in commas.output and "ran 4 cells" in repeated.output
    assert (tmp_path / "a" / "table.md").read_text() == (tmp_path / "b" / "table.md").read_text()
    twice = invoke(*base, "--policy", "fifo,fifo", "--out", tmp_path / "c")
    assert twice.exit_code == 2 and "--policy lists fifo more than once" in twice.stderr
    assert not (tmp_path / "c").exists()


def test_commands_that_run_one_thing_refuse_a_list(tmp_path: Path) -> None:
    done = invoke(
        "simulate", "--trace", VC_SLICE, "--cluster", "32x8", "--policy", "fifo,sjf",
        "--out", tmp_path / "r",
    )  # fmt: skip
    assert done.exit_code == 2
    assert "--policy takes one value here, got 'fifo,sjf'; to compare policies, run dlsched " in (
        done.stderr
    )


def test_the_trace_is_an_option_everywhere(tmp_path: Path) -> None:
    as_option = invoke("analyze", "--trace", VC_SLICE, "--out", tmp_path / "a")
    as_argument = invoke("analyze", VC_SLICE, "--out", tmp_path / "b")
    assert as_option.exit_code == as_argument.exit_code == 0
    assert invoke("trace", "validate", "--trace", VC_SLICE).exit_code == 0
    both = invoke("analyze", VC_SLICE, "--trace", PHILLY_2000, "--out", tmp_path / "c")
    assert both.exit_code == 2 and "give the trace once" in both.stderr


def test_vc_lists_and_selection_messages(tmp_path: Path) -> None:
    out = tmp_path / "one.parquet"
    done = invoke("trace", "convert", PHILLY_2000, "--vc", "6214e9,2869ce", "--out", out)
    repeated = invoke(
        "trace", "convert", PHILLY_2000, "--vc", "6214e9", "--vc", "2869ce",
        "--out", tmp_path / "two.parquet",
    )  # fmt: skip
    assert done.exit_code == repeated.exit_code == 0
    assert done.output.split(", ")[-1] == repeated.output.split(", ")[-1].replace("two", "one")


def test_a_preset_refuses_options_it_would_override(tmp_path: Path) -> None:
    done = invoke(
        "simulate", "--preset", "helios-philly", "--vc", "2869ce", "--placement", "spread",
        "--out", tmp_path / "r",
    )  # fmt: skip
    assert done.exit_code == 2
    assert "--preset fixes the trace, cluster, job selection and placement; drop --placement, " in (
        done.stderr
    )


def test_messages_speak_the_command_line(tmp_path: Path) -> None:
    """No Python in messages: no ``fill_gaps=True``, ``skip_bad_rows=True`` or ``<class ...>``."""
    gap = invoke("energy", "replay", "philly", "--preset", "philly", "--out", tmp_path / "e")
    assert gap.exit_code == 2 and "pass --fill-gaps to forward-fill" in gap.stderr
    assert "fill_gaps" not in gap.stderr
    bad = tmp_path / "bad.csv"
    header, first, *rest = PHILLY_2000.read_text().splitlines()[:5]
    fields = first.split(",")
    fields[header.split(",").index("num_gpus")] = "x"
    bad.write_text("\n".join([header, ",".join(fields), *rest]) + "\n")
    rows = invoke("trace", "convert", bad, "--out", tmp_path / "bad.parquet")
    assert rows.exit_code == 2 and "pass --skip-bad-rows" in rows.stderr
    assert "skip_bad_rows" not in rows.stderr
    typed = invoke(
        "simulate", "--trace", VC_SLICE, "--cluster", "32x8", "--policy", "tiresias",
        "--policy-opt", "round_s=abc", "--out", tmp_path / "r",
    )  # fmt: skip
    assert typed.exit_code == 2
    assert "option round_s: expected a number, got 'abc'" in typed.stderr
    assert "<class" not in typed.stderr


def test_listings_are_aligned() -> None:
    for what in ("clusters", "policies", "placements", "power-managers"):
        lines = [x for x in invoke("list", what).output.splitlines() if not x.endswith(":")]
        starts = {len(x) - len(x.split(maxsplit=1)[1]) for x in lines}
        names = max(len(x.split()[0]) for x in lines)
        assert starts == {names + 2}, (what, lines)
    presets = invoke("preset", "list").output.splitlines()
    assert all(line.startswith("helios-philly  load scale ") for line in presets)


def test_progress_is_reported_when_stderr_is_piped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("dlsched.cli.progress.PIPED_EVERY_S", 0.0)
    done = invoke("simulate", "--trace", VC_SLICE, "--cluster", "32x8", "--out", tmp_path / "r")
    assert done.exit_code == 0
    line = re.compile(
        r"simulating fifo, jobs finished: ([\d,]+) of 990 \(\d+%\), 0:\d\d:\d\d elapsed"
    )
    done_counts = [int(m[1]) for x in done.stderr.splitlines() if (m := line.fullmatch(x))]
    assert len(done_counts) > 10 and done_counts == sorted(done_counts)
    assert done_counts[-1] > 900
    quiet = invoke(
        "simulate", "--trace", VC_SLICE, "--cluster", "32x8", "--no-progress",
        "--out", tmp_path / "q",
    )  # fmt: skip
    assert "jobs finished" not in quiet.stderr


def test_a_failed_sweep_leaves_no_directory(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    for bad in (
        ["--trace", tmp_path / "absent.csv", "--cluster", "32x8"],
        ["--trace", VC_SLICE, "--cluster", "nonsense"],
    ):
        done = invoke("sweep", *bad, "--policy", "fifo", "--out", out)
        assert done.exit_code == 2, done.output
        assert not out.exists()
    # A failure inside a cell: the directory it created goes too (nothing was done).
    done = invoke("sweep", "--trace", PHILLY_2000, "--cluster", "32x8", "--policy", "fifo",
                  "--workers", "1", "--out", out)  # fmt: skip
    assert done.exit_code == 2 and "set aside" in done.stderr
    assert not out.exists()


def test_sweep_figure_titles_fit_their_figures() -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from dlsched.sweep.report import METRICS, metric_figure

    for groups in (1, 2, 9):
        labels = [f"philly_jobs / philly-vcs / tiresias / consolidate {i}" for i in range(groups)]
        for _, label in METRICS:
            fig = metric_figure(labels, [1.0] * groups, [0.1] * groups, label)
            canvas = FigureCanvasAgg(fig)
            canvas.draw()
            box = fig.axes[0].title.get_window_extent(canvas.get_renderer())
            assert box.x0 >= 0 and box.x1 <= fig.bbox.x1 and box.y1 <= fig.bbox.y1, label


def test_the_energy_report_cites_only_what_users_have(tmp_path: Path) -> None:
    out = tmp_path / "e"
    done = invoke("energy", "replay", "philly", "--preset", "philly", "--fill-gaps", "--out", out)
    assert done.exit_code == 0, done.output
    assert "seeds.md" not in (out / "index.html").read_text()
    assert "seeds.md" not in json.dumps(json.loads((out / "stats.json").read_text()))


def test_help_paragraphs_are_reflowed_for_the_terminal() -> None:
    """typer prints a docstring's later paragraphs with the source's line breaks, which the
    terminal wraps again into ragged lines; every command's help has each paragraph on one
    line (a paragraph marked with click's \\b keeps its lines)."""
    from dlsched.cli.group import COMMANDS, load_command, reflow

    assert reflow("a\nb\n\n  c\n  d\n\n\b\nkeep\nlines") == "a b\n\nc d\n\n\b\nkeep\nlines"
    for name in COMMANDS:
        command = load_command(name)
        for sub in [command, *getattr(command, "commands", {}).values()]:
            for paragraph in (sub.help or "").split("\n\n"):
                assert "\n" not in paragraph or paragraph.startswith("\b"), (name, paragraph)
