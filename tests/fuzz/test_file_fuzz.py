"""Property-based fuzzing of the hostile files of issue 27: Kueue manifests, request traces
(Azure, BurstGPT, Mooncake), token files, cluster files, nested TOML/JSON and huge numbers.

Every generated file is either accepted, with what was read inside the documented limits
(finite numbers, dates in range, nesting within :data:`MAX_NESTING`), or refused with one
line naming the file, never another exception, a traceback or a hang (the generated sizes
are bounded, a few MB at most), and a refused command writes nothing.
``DLSCHED_FUZZ_EXAMPLES=N`` runs N examples per test.
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from dlsched.cli.main import app
from dlsched.cluster.errors import ClusterFormatError
from dlsched.cluster.toml_io import parse_cluster_toml
from dlsched.safe_load import (
    LATEST_UNIX,
    MAX_INTEGER,
    MAX_LINE_CHARS,
    MAX_NESTING,
    InputError,
    load_json,
    load_toml,
    load_yaml_documents,
)
from dlsched.service.api.auth import TokenFileError
from dlsched.service.api.tenants import RESERVED_TENANT, read_tokens, tenant_key
from dlsched.serving.readers.read import read_requests
from dlsched.tenancy.errors import TenancyError
from dlsched.tenancy.manifests import read_manifests
from dlsched.tenancy.quantity import MAX_QUANTITY
from dlsched.trace import TraceError
from dlsched.trace.checks import MAX_SECONDS
from tests.fuzz.strategies import fuzz, nasty_text


def one_line(message: str, source: str) -> None:
    assert "\n" not in message and message.startswith(source), message
    assert "Traceback" not in message


huge_digits = st.integers(1, 6000).map(lambda n: "9" * n)
number_texts = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    huge_digits,
    st.tuples(st.integers(1, 9), st.integers(-5000, 5000)).map(lambda t: f"{t[0]}e{t[1]}"),
    st.sampled_from(["nan", "inf", "-inf", "NaN", "Infinity", "1e400", "-0", "0.5", "1e308"]),
)


def finite_everywhere(value: object, depth: int = 0) -> None:
    """Numbers finite and integers bounded, nesting within the limit."""
    assert depth <= MAX_NESTING
    if isinstance(value, dict):
        for item in value.values():
            finite_everywhere(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            finite_everywhere(item, depth + 1)
    elif isinstance(value, float):
        assert math.isfinite(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        assert abs(value) <= MAX_INTEGER


# ---------------------------------------------------------------- nested TOML/JSON, numbers


@st.composite
def nested_json(draw: st.DrawFn) -> str:
    depth = draw(st.integers(0, 3 * MAX_NESTING))
    leaf = draw(number_texts)
    text = leaf
    for _ in range(depth):
        text = f'{{"k": {text}}}' if draw(st.booleans()) else f"[{text}]"
    return text


@fuzz(200)
@given(text=nested_json())
def test_json_is_read_within_limits_or_refused_in_one_line(text: str) -> None:
    try:
        value = load_json(text, "f.json")
    except InputError as exc:
        one_line(str(exc), "f.json")
        return
    finite_everywhere(value)


@st.composite
def nested_toml(draw: st.DrawFn) -> str:
    depth = draw(st.integers(0, 3 * MAX_NESTING))
    leaf = draw(number_texts)
    style = draw(st.sampled_from(["array", "inline", "dotted", "tables"]))
    if style == "dotted":
        return ".".join(["k"] * max(depth, 1)) + f" = {leaf}\n"
    if style == "tables":
        return f"[{'.'.join(['t'] * max(depth, 1))}]\nv = {leaf}\n"
    text = leaf
    for _ in range(depth):
        text = f"[{text}]" if style == "array" else f"{{ k = {text} }}"
    return f"v = {text}\n"


@fuzz(200)
@given(text=nested_toml())
def test_toml_is_read_within_limits_or_refused_in_one_line(text: str) -> None:
    try:
        value = load_toml(text, "f.toml")
    except InputError as exc:
        one_line(str(exc), "f.toml")
        return
    finite_everywhere(value)


@fuzz(200)
@given(number=number_texts, depth=st.integers(0, 2 * MAX_NESTING), flow=st.booleans())
def test_yaml_numbers_and_nesting_within_limits_or_refused(
    number: str, depth: int, flow: bool
) -> None:
    if flow:
        text = "a: " + "[" * depth + number + "]" * depth + "\n"
    else:
        text = "".join(f"{'  ' * i}k{i}:\n" for i in range(depth)) + "  " * depth + number + "\n"
    try:
        docs = load_yaml_documents(text, "f.yaml")
    except InputError as exc:
        one_line(str(exc), "f.yaml")
        return
    finite_everywhere(docs[0] if docs else None)


# ---------------------------------------------------------------- manifests

FLAVOR = "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\n"
quantities = st.one_of(
    number_texts,
    st.sampled_from([".inf", "-.inf", ".nan", "1e400", "36Gi", "500m", "1e18", "8Ei", "-1"]),
    number_texts.map(lambda n: f'"{n}Ki"'),
)


@st.composite
def manifests(draw: st.DrawFn) -> str:
    quota = draw(quantities)
    cq = (
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq}\n"
        "spec:\n  namespaceSelector: {}\n  resourceGroups:\n"
        '  - coveredResources: ["nvidia.com/gpu"]\n    flavors:\n    - name: f\n'
        f"      resources:\n      - name: nvidia.com/gpu\n        nominalQuota: {quota}\n"
    )
    hostile = draw(st.sampled_from(["none", "alias", "duplicate", "deep", "bomb", "bad"]))
    if hostile == "alias":
        cq = cq.replace("namespaceSelector: {}", "namespaceSelector: &sel {}\n  x: *sel")
    elif hostile == "duplicate":
        cq = cq.replace("metadata: {name: cq}", "metadata: {name: cq}\nmetadata: {name: cq}")
    elif hostile == "deep":
        levels = draw(st.integers(MAX_NESTING - 5, 3 * MAX_NESTING))
        cq += "status: " + "[" * levels + "]" * levels + "\n"
    elif hostile == "bomb":
        cq += "status: &a [&b [x, x], *b, *b]\n"
    elif hostile == "bad":
        cq += f"status: {json.dumps(draw(nasty_text))}\n"
    return FLAVOR + "---\n" + cq


@fuzz(150)
@given(text=manifests())
def test_manifests_are_read_within_limits_or_refused_in_one_line(
    tmp_path_factory: Any, text: str
) -> None:
    path = tmp_path_factory.mktemp("m") / "m.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        tenancy = read_manifests(path)
    except TenancyError as exc:
        one_line(str(exc), str(path))
        return
    quotas = [
        quota.nominal
        for cq in tenancy.cluster_queues.values()
        for group in cq.resource_groups
        for fq in group.flavors
        for quota in fq.resources.values()
    ]
    assert quotas and all(math.isfinite(q) and 0 <= q <= MAX_QUANTITY for q in quotas)


# ---------------------------------------------------------------- request traces

far_dates = st.sampled_from(
    ["9999-11-16 18:15:46", "1970-01-01 00:00:00", "2100-01-01 00:00:00", "1999-12-31 23:59:59",
     "2023-11-16 18:15:46.6805900", "2023-11-16 18:15:46." + "9" * 5000, "2023-02-30 00:00:00"]
)  # fmt: skip
values = st.one_of(number_texts, nasty_text.map(lambda s: s.replace("\n", " ")))


@st.composite
def request_files(draw: st.DrawFn) -> tuple[str, str]:
    kind = draw(st.sampled_from(["azure", "burstgpt", "mooncake"]))
    rows: list[str] = []
    for i in range(draw(st.integers(1, 6))):
        good = draw(st.integers(0, 2)) > 0
        tokens = (str(3 + i), str(4 + i)) if good else (draw(values), draw(values))
        if kind == "azure":
            stamp = f"2023-11-16 18:15:{i:02d}" if good else draw(far_dates)
            rows.append(f"{stamp},{tokens[0]},{tokens[1]}")
        elif kind == "burstgpt":
            stamp = str(i) if good else draw(values)
            rows.append(f"{stamp},m,{tokens[0]},{tokens[1]}")
        else:
            stamp = str(1000 * i) if good else draw(number_texts)
            rows.append(f'{{"timestamp": {stamp}, "input_length": {tokens[0]}, '
                        f'"output_length": {tokens[1]}}}')  # fmt: skip
    if draw(st.integers(0, 9)) == 0:
        rows.insert(draw(st.integers(0, len(rows))), "x" * (MAX_LINE_CHARS + 1))
    header = {
        "azure": "TIMESTAMP,ContextTokens,GeneratedTokens\n",
        "burstgpt": "Timestamp,Model,Request tokens,Response tokens\n",
        "mooncake": "",
    }[kind]
    name = "r.jsonl" if kind == "mooncake" else f"{kind}.csv"
    return name, header + "\n".join(rows) + "\n"


@fuzz(120)
@given(file=request_files())
def test_request_traces_are_read_within_limits_or_refused(
    tmp_path_factory: Any, file: tuple[str, str]
) -> None:
    path = tmp_path_factory.mktemp("r") / file[0]
    path.write_text(file[1], encoding="utf-8", errors="surrogatepass")
    try:
        result = read_requests(path, skip_bad_rows=True)
    except TraceError as exc:
        assert str(exc).startswith(str(path)), str(exc)
        assert all(len(line) < 400 for line in str(exc).splitlines())
        return
    assert len(result.trace) + len(result.errors) == result.rows_read
    assert all(e.path == str(path) and e.line >= 1 for e in result.errors)
    assert all(len(str(e)) < len(str(path)) + 400 for e in result.errors)
    arrivals = result.trace.column("arrival_time").to_pylist()
    assert all(math.isfinite(a) and 0 <= a <= MAX_SECONDS for a in arrivals)
    if result.trace.origin_unix is not None:
        assert result.trace.origin_unix < LATEST_UNIX


@fuzz(10)
@given(file=request_files())
def test_serve_sim_on_hostile_requests_is_exit_0_or_2_and_writes_nothing_on_2(
    tmp_path_factory: Any, file: tuple[str, str]
) -> None:
    base = tmp_path_factory.mktemp("s")
    path = base / file[0]
    path.write_text(file[1], encoding="utf-8", errors="surrogatepass")
    out = base / "run"
    result = CliRunner().invoke(app, ["serve-sim", str(path), "--out", str(out)])
    assert result.exit_code in (0, 2), (result.output, result.exception)
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        assert not out.exists()


# ---------------------------------------------------------------- token files

tenant_names = st.one_of(
    nasty_text,
    st.sampled_from(["admin", "Admin", "ａｄｍｉｎ", "team-a", "Team-A", "ｔｅａｍ-ａ",
                     "team\u200da", "", " ", "Straße", "STRASSE", "équipe", "e\u0301quipe"]),
)  # fmt: skip


def toml_string(text: str) -> str:
    return '"' + "".join(ch if ch.isprintable() and ch not in '"\\' else
                         f"\\u{ord(ch):04x}" for ch in text) + '"'  # fmt: skip


@st.composite
def token_files(draw: st.DrawFn) -> str:
    names = draw(st.lists(tenant_names, min_size=1, max_size=4))
    admin = draw(st.sampled_from(["admin-token-0123456789abcdef", "short", "nan"]))
    lines = [f"admin_token = {toml_string(admin)}"]
    for i, name in enumerate(names):
        lines.append(f"[tenants.{toml_string(name)}]")
        lines.append(f'token = "tenant-token-{i:04d}-abcdefgh"')
        queues = draw(st.sampled_from(['["q"]', "[]", "nan", "[1e400]"]))
        lines.append(f"queues = {queues}")
    if draw(st.integers(0, 4)) == 0:
        lines.append(f"extra = {draw(number_texts)}")
    return "\n".join(lines) + "\n"


@fuzz(200)
@given(text=token_files())
def test_token_files_are_read_with_distinct_names_or_refused(
    tmp_path_factory: Any, text: str
) -> None:
    path = tmp_path_factory.mktemp("t") / "tokens.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    path.chmod(0o600)
    try:
        tokens = read_tokens(path)
    except TokenFileError as exc:
        one_line(str(exc), str(path))
        return
    keys = [tenant_key(p.tenant or "") for _, p in tokens.tenants]
    assert len(set(keys)) == len(keys) and RESERVED_TENANT not in keys and "" not in keys


# ---------------------------------------------------------------- cluster files


@st.composite
def hostile_cluster_files(draw: st.DrawFn) -> str:
    value = draw(st.one_of(number_texts, st.integers(0, 3 * MAX_NESTING).map(
        lambda d: "[" * d + "1" + "]" * d)))  # fmt: skip
    key = draw(st.sampled_from(["count", "gpus", "cpus", "memory_mib", "rack_size"]))
    groups = draw(st.integers(1, 3))
    body = "".join("[[nodes]]\ncount = 1\ngpus = 1\n" for _ in range(groups - 1))
    extra = "" if key in ("count", "gpus") else "count = 1\ngpus = 1\n"
    return f'name = "c"\n{body}[[nodes]]\n{extra}{key} = {value}\n'


@fuzz(200)
@given(text=hostile_cluster_files())
def test_cluster_files_with_hostile_numbers_parse_or_are_refused_in_one_line(text: str) -> None:
    try:
        spec = parse_cluster_toml(text, "c.toml")
    except ClusterFormatError as exc:
        one_line(str(exc), "c.toml")
        return
    for node in spec.nodes:
        assert node.gpus >= 0 and (node.cpus is None or math.isfinite(node.cpus))
