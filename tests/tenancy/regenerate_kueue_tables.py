"""Regenerate README's Kueue conformance table and the tenancy reference's list of refused
cases from what the cases give now (what ``test_readme_and_reference_show_these_results``
asserts): ``PYTHONPATH=src python -m tests.tenancy.regenerate_kueue_tables``. A case that
fails (neither passes nor is refused) is listed and nothing is written, unless
``--refusals-only``, which rewrites the refused list alone."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tests.tenancy.kueue_conformance import (
    by_file,
    markdown_refusals,
    markdown_table,
    replace_block,
)
from tests.tenancy.test_kueue_conformance import CASES, REFUSED, REPO, outcome


def main(argv: list[str]) -> int:
    results, failed = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, case in enumerate(CASES):
            where = Path(tmp) / str(i)
            where.mkdir()
            try:
                results.append((case, outcome(case, where)))
            except Exception as err:  # a failing case: reported, not counted
                failed[case.id] = f"{type(err).__name__}: {str(err)[:200]}"
    refused = {c.id: REFUSED[c.id] for c, o in results if o == "refused"}
    reference = REPO / "docs" / "reference" / "tenancy.md"
    text = reference.read_text()
    if failed and "--refusals-only" not in argv:
        for case_id, why in failed.items():
            print(f"FAILED {case_id}: {why}")
        print(f"{len(failed)} cases fail; nothing written")
        return 1
    reference.write_text(replace_block(text, "kueue-refused", markdown_refusals(refused)))
    if not failed:
        readme = REPO / "README.md"
        table = markdown_table(by_file(iter(results)))
        readme.write_text(replace_block(readme.read_text(), "kueue-conformance", table))
    print(f"{len(results)} cases, {len(refused)} refused, {len(failed)} failed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
