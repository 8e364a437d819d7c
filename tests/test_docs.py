"""The documentation: the site builds with ``mkdocs build --strict``, every relative link of the
README and of docs/ reaches a file (and a heading, where it names one), and the user guide runs
as written — every code block of every guide page, in the order of the site's navigation, in one
directory — and shows what its text says it shows.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.readme_commands import SHARED, make_checkout, readme_blocks, run_command, user_env

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def guide_pages() -> list[Path]:
    """The guide's pages in the order of mkdocs.yml's navigation."""
    nav = (REPO / "mkdocs.yml").read_text()
    return [DOCS / m for m in re.findall(r"^\s+- (guide/\S+\.md)$", nav, re.MULTILINE)]


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "guide" / "3-quotas" / "index.html").is_file()


def test_every_guide_page_is_in_the_navigation() -> None:
    assert {p.name for p in guide_pages()} == {p.name for p in (DOCS / "guide").glob("*.md")}


def anchors(markdown: str) -> set[str]:
    """The heading anchors of a page, as GitHub and MkDocs spell them."""
    out = set()
    fence = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"\s", "-", re.sub(r"[^\w\- ]", "", title)))
    return out


def links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.DOTALL)
    return [t for t in LINK.findall(text) if not re.match(r"^[a-z]+:", t)]


@pytest.mark.parametrize(
    "page",
    [REPO / "README.md", *sorted(DOCS.rglob("*.md"))],
    ids=lambda p: str(p.relative_to(REPO)),
)
def test_relative_links_reach_a_file_and_a_heading(page: Path) -> None:
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        if not where.exists():
            broken.append(f"{target}: no such file")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where.read_text()):
            broken.append(f"{target}: no heading #{anchor}")
    assert not broken, f"{page.relative_to(REPO)}: {broken}"


def table_rows(path: Path) -> list[dict[str, str]]:
    lines = [line for line in path.read_text().splitlines() if line.startswith("|")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(head, (c.strip() for c in line.strip("|").split("|")), strict=True))
            for line in lines[2:]]  # fmt: skip


def mean_and_half(cell: str) -> tuple[float, float]:
    mean, _, half = cell.replace(",", "").partition("±")
    return float(mean), float(half or 0)


@pytest.mark.long
def test_the_guide_runs_as_written_in_one_directory(tmp_path: Path) -> None:
    if not SHARED.is_dir():
        pytest.skip("the shared public traces are not available beside the checkout")
    checkout = make_checkout(tmp_path)
    ran: list[dict[str, Any]] = []
    for page in guide_pages():
        for block in readme_blocks(page.read_text()):
            for command in block.commands:
                result = run_command(command, checkout, user_env(), 900)
                assert result["rc"] == 0, f"{page.name}: {command}\n{result['err'][-2000:]}"
                ran.append(result)
    assert len(ran) >= 10
    # Page 2: FIFO's average JCT stands apart from SJF's and Tiresias's, whose intervals
    # overlap neither FIFO's; Tiresias queues jobs less than SJF.
    rows = {r["policy"]: r for r in table_rows(checkout / "sweeps/policies/table.md")}
    fifo, sjf, tiresias = (
        mean_and_half(rows[p]["avg JCT (s)"]) for p in ("fifo", "sjf", "tiresias")
    )
    assert fifo[0] - fifo[1] > max(sjf[0] + sjf[1], tiresias[0] + tiresias[1])
    assert (
        mean_and_half(rows["tiresias"]["avg queue (s)"])[0]
        < mean_and_half(rows["sjf"]["avg queue (s)"])[0]
    )
    # ... and the sweep's analysis draws one line per policy.
    compared = json.loads((checkout / "report/policies/stats.json").read_text())
    assert (checkout / "report/policies/jct_cdf.png").is_file()
    assert [line["label"] for line in compared["lines"]] == ["fifo", "sjf", "tiresias"]
    # Page 3: with the cohort, average JCT falls by about half under either policy.
    with (checkout / "sweeps/quotas/results.csv").open() as handle:
        quota = {(r["policy"], r["queues"]): float(r["avg_jct_s"]) for r in csv.DictReader(handle)}
    for policy in ("fifo", "tiresias"):
        assert quota[(policy, "philly-cohort")] < 0.65 * quota[(policy, "philly-isolated")]
    assert (checkout / "report/cohort/tenants/usage.png").is_file()

    # Page 4: two replicas batch so deep that tokens come slowly, four meet the SLO;
    # the training policy moves training JCT.
    def summary(run: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((checkout / run / "summary.json").read_text())
        return data

    two = summary("runs/serve/two")
    assert two["slo_attainment"] < 0.8
    assert two["tbt_s"]["p99"] > 0.2
    assert summary("runs/serve/four")["slo_attainment"] > 0.95
    first = summary("runs/serve/first")["training"]["training_avg_jct_s"]
    fifo_jct = summary("runs/serve/fifo")["training"]["training_avg_jct_s"]
    assert fifo_jct > 2 * first
