"""Hypothesis strategies for hostile input: text with the characters that break parsers and
processes, JSON of any shape, and request bodies derived from the service's OpenAPI schema."""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("DLSCHED_FUZZ_EXAMPLES", "0"))
"""Examples per fuzz test when set (a long local run); CI uses each test's modest default."""


def examples(default: int) -> int:
    """How many examples a fuzz test runs: ``default`` unless ``DLSCHED_FUZZ_EXAMPLES``."""
    return EXAMPLES or default


def fuzz(default: int) -> settings:
    """Settings of a fuzz test: :func:`examples` examples, derandomized (CI runs the same
    ones each time), no deadline (a request or a simulation may take a while)."""
    return settings(
        max_examples=examples(default),
        deadline=None,
        derandomize=True,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.function_scoped_fixture,
        ],
    )


NASTY_STRINGS = (
    "",
    " ",
    "\x00",
    "a\x00b",
    "\ud800",
    "\udcff",
    "j1",
    "j0",
    "j01",
    "j\u0661",
    "j\uff11",
    "j" + "9" * 30,
    "J1",
    "../../etc/passwd",
    "%00",
    "%ED%A0%80",
    '"',
    "'",
    "\n",
    "\r\n",
    ",",
    "\u202e",
    "<script>alert(1)</script>",
    "1e308",
    "-0",
    "NaN",
    "x" * 5000,
)

nasty_text = st.one_of(
    st.sampled_from(NASTY_STRINGS),
    st.text(max_size=40),
    st.text(st.characters(codec=None, categories=["Cs", "Cc", "Zs", "Nd"]), max_size=10),
)
"""Short texts, often with NUL, lone surrogates, control characters or non-ASCII digits."""

numbers = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 1, 2**31, 2**63, 10**308, 1e308, -1e-308]),
)

json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), numbers, nasty_text),
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(nasty_text, inner, max_size=5)
    ),
    max_leaves=20,
)
"""Any JSON-like value (NaN and infinities included: they make non-standard JSON)."""


def value_for(schema: dict[str, Any], definitions: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values near what an OpenAPI/JSON schema asks for: mostly valid-looking, often just
    outside its bounds, sometimes of another type."""
    if "$ref" in schema:
        return value_for(definitions[schema["$ref"].rsplit("/", 1)[-1]], definitions)
    if "anyOf" in schema:
        return st.one_of([value_for(s, definitions) for s in schema["anyOf"]])
    kind = schema.get("type")
    near: st.SearchStrategy[Any]
    if kind == "integer":
        low, high = schema.get("minimum", -(2**40)), schema.get("maximum", 2**40)
        near = st.integers(min_value=low - 2, max_value=high + 2)
    elif kind == "number":
        near = st.floats(allow_nan=True, allow_infinity=True)
    elif kind == "boolean":
        near = st.booleans()
    elif kind == "string":
        pattern = schema.get("pattern")
        near = st.from_regex(pattern, fullmatch=True) if pattern else nasty_text
        near = st.one_of(near, nasty_text)
    elif kind == "array":
        items = value_for(schema.get("items", {}), definitions)
        near = st.lists(items, max_size=schema.get("maxItems", 5) + 2)
    elif kind == "null":
        near = st.none()
    else:
        near = json_values
    return st.one_of(near, near, near, json_values)


def object_for(schema: dict[str, Any], definitions: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Objects with a random subset of ``schema``'s properties (required ones usually
    present), sometimes an unknown key."""
    props = schema.get("properties", {})
    required = set(schema.get("required", ()))

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, sub in props.items():
            present = draw(st.integers(0, 9)) < (9 if name in required else 5)
            if present:
                out[name] = draw(value_for(sub, definitions))
        if draw(st.integers(0, 9)) == 0:
            out[draw(nasty_text)] = draw(json_values)
        return out

    return build()
