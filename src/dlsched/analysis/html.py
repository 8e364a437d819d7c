"""Small HTML building blocks shared by dlsched's self-contained report pages. Every text is
escaped; pages need nothing but the files beside them (inline CSS, no scripts)."""

from __future__ import annotations

import html
from collections.abc import Sequence


def escape(text: str) -> str:
    return html.escape(text, quote=True)


def paragraph(text: str) -> str:
    return f"<p>{escape(text)}</p>"


def table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A table with a header row; cells are plain text."""
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def page_start(title: str, css: str) -> list[str]:
    """The opening of a page titled ``title`` with an inline stylesheet, up to its heading."""
    return [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{css}</style></head><body><main>",
        f"<h1>{escape(title)}</h1>",
    ]


def pairs(rows: Sequence[tuple[str, str]]) -> str:
    """A two-column table of labels and values, without a header."""
    body = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows)
    return f'<table class="pairs">{body}</table>'
