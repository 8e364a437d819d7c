"""Kueue's own table-driven preemption tests, case by case (tests/data/kueue/conformance, each
file citing Kueue's commit, file and test function): every case passes, or is refused for a
stated reason that the table in README's tenancy section counts. None is skipped silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlsched.tenancy.admission import Workload
from dlsched.tenancy.classic_preemption import candidate_order
from dlsched.tenancy.quantity import parse_quantity
from tests.tenancy.kueue_conformance import (
    NOW,
    Case,
    Refused,
    _kind,
    by_file,
    check_supported,
    created,
    generated_block,
    load_cases,
    markdown_refusals,
    markdown_table,
    run_assignment,
    run_preemption,
    run_schedule,
    sequence,
)

REPO = Path(__file__).parents[2]

CASES = load_cases()
REFUSED: dict[str, str] = {}
"""Case id -> why it is refused, filled as the cases run (for the table test)."""


def outcome(case: Case, where: Path) -> str:
    """``passed`` (asserting the expected result) or ``refused``."""
    try:
        if case.kind == "preemption":
            _check_preemption(case, where)
        elif case.kind == "ordering":
            _check_ordering(case, where)
        elif case.kind == "assignment":
            _check_assignment(case, where)
        elif case.kind == "schedule":
            _check_schedule(case, where)
        else:
            raise AssertionError(f"unknown case kind {case.kind!r}")
    except Refused as why:
        REFUSED[case.id] = str(why)
        return "refused"
    return "passed"


def _check_preemption(case: Case, where: Path) -> None:
    got = run_preemption(case, where)
    expect = case.data["expect"]
    evicted = {w["name"] for w in case.data.get("admitted") or [] if w.get("evicted")}
    # Kueue counts a target already being evicted but marks it Preempted no second time.
    marked = {k: v for k, v in got.items() if k not in evicted}
    assert marked == (expect.get("preempted") or {}), got
    assert len(got) == expect["count"], got


def _check_assignment(case: Case, where: Path) -> None:
    expect = case.data["expect"]
    wanted: dict[str, tuple[str, str]] = {}
    # A resource asked with quantity 0 takes no quota: dlsched assigns it no flavor.
    zero = {
        r
        for ps in case.data["workload"]["podSets"]
        for r, q in (ps.get("requests") or {}).items()
        if parse_quantity(q, r) == 0
    }
    for ps in expect.get("podSets") or []:
        for resource, given in (ps.get("flavors") or {}).items():
            if resource in zero:
                continue
            entry = (str(given["flavor"]), str(given["mode"]))
            if wanted.setdefault(_kind(resource), entry) != entry:
                raise Refused(
                    f"pod sets take {resource} from different flavors or modes (a dlsched "
                    "workload holds each resource in one flavor)"
                )
    mode, borrows, kinds = run_assignment(case, where)
    assert mode == expect["mode"], (mode, kinds)
    if mode == "NoFit":
        return
    assert borrows == bool(expect.get("borrowing")), (borrows, kinds)
    assert kinds == wanted, kinds


def _check_schedule(case: Case, where: Path) -> None:
    expect = case.data["expect"]
    # Kueue's admission lists a resource asked with quantity 0 with no flavor, as dlsched.
    zero = {
        f"{w['namespace']}/{w['name']}": {
            _kind(r)
            for ps in w["podSets"]
            for r, q in (ps.get("requests") or {}).items()
            if parse_quantity(q, r) == 0
        }
        for w in case.data.get("workloads") or []
    }
    wanted: dict[str, tuple[str, dict[str, str]]] = {}
    for ref, admission in (expect.get("assignments") or {}).items():
        kinds: dict[str, str] = {}
        for ps in admission["podSets"]:
            for resource, flavor in (ps.get("flavors") or {}).items():
                kind = _kind(resource)
                if kind in zero.get(ref, set()):
                    continue
                if kinds.setdefault(kind, str(flavor)) != flavor:
                    raise Refused(
                        f"{ref}: pod sets take {resource} from different flavors (a dlsched "
                        "workload holds each resource in one flavor)"
                    )
        wanted[ref] = (str(admission["clusterQueue"]), kinds)
    got = run_schedule(case, where)
    assert got.assignments == wanted, got
    assert got.left == {k: sorted(v) for k, v in (expect.get("left") or {}).items()}, got
    assert got.inadmissible == {
        k: sorted(v) for k, v in (expect.get("inadmissible") or {}).items()
    }, got
    assert got.preempted == (expect.get("preempted") or {}), got


def _check_ordering(case: Case, where: Path) -> None:
    check_supported(case)
    specs = case.data["candidates"]
    seq = sequence(specs)
    queues = {name: i for i, name in enumerate(dict.fromkeys(str(s["queue"]) for s in specs))}
    target = queues.get(str(case.data["target"]), -1)
    workloads = []
    for spec in specs:
        wl = Workload(
            spec["name"],
            queues[str(spec["queue"])],
            int(spec.get("priority") or 0),
            created(spec),
            seq[spec["name"]],
            {},
            evicting=bool(spec.get("evicted")),
        )
        # No reservation: Kueue takes now.
        wl.admitted_at = NOW + float(spec.get("reservedAt") or 0)
        workloads.append(wl)
    order = sorted(
        workloads,
        # Kueue: other queues' workloads before the preemptor queue's, after those evicted.
        key=lambda w: (not w.evicting, w.cq == target, *candidate_order(w)[1:]),
    )
    assert [w.key for w in order] == case.data["expect"]["order"]


def test_enough_cases_each_citing_its_source() -> None:
    assert len(CASES) >= 90
    assert len({c.id for c in CASES}) == len(CASES)
    for case in CASES:
        assert case.source["project"] == "kubernetes-sigs/kueue"
        assert len(case.source["commit"]) == 40
        assert case.source["file"].endswith("_test.go") and case.source["test"].startswith("Test")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_kueue_case(case: Case, tmp_path: Path) -> None:
    outcome(case, tmp_path)


def test_readme_and_reference_show_these_results(tmp_path: Path) -> None:
    """README's pass table and the tenancy reference's list of refused cases are what the
    cases give now (regenerate both from this test's output when they change)."""
    refused: dict[str, str] = {}
    results = []
    for i, case in enumerate(CASES):
        where = tmp_path / str(i)
        where.mkdir()
        results.append((case, outcome(case, where)))
        if results[-1][1] == "refused":
            refused[case.id] = REFUSED[case.id]
    table, reasons = markdown_table(by_file(iter(results))), markdown_refusals(refused)
    readme = (REPO / "README.md").read_text()
    reference = (REPO / "docs" / "reference" / "tenancy.md").read_text()
    assert generated_block(readme, "kueue-conformance") == table, table
    assert generated_block(reference, "kueue-refused") == reasons, reasons
