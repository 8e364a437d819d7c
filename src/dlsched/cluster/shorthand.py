"""The one-line cluster shorthand: ``32x8`` or ``v100:16x4,k80:8x4``.

Grammar (blanks around commas are ignored, the ``x`` may be upper case)::

    cluster := group ("," group)*
    group   := [TYPE ":"] COUNT "x" GPUS
    TYPE    := a letter or digit, then letters, digits, "_", "." or "-"
    COUNT   := decimal integer >= 1          (nodes in the group)
    GPUS    := decimal integer >= 1          (GPUs per node)

Every node is in partition ``default``; an untyped group has GPU type ``gpu``. Names and racks
follow :mod:`dlsched.cluster.layout`: ``node-000`` or ``v100-000`` onwards per type, racks of
16 nodes with every group starting a new rack (``rack0``, ``rack1``, ...).
"""

from __future__ import annotations

import re

from dlsched.cluster.errors import ClusterFormatError
from dlsched.cluster.layout import NodeGroup, expand_groups
from dlsched.cluster.limits import MAX_NODES, size_problem
from dlsched.cluster.spec import DEFAULT_GPU_TYPE, ClusterSpec

SHORTHAND_GRAMMAR = (
    "[TYPE:]COUNTxGPUS[,[TYPE:]COUNTxGPUS...], e.g. '32x8' or 'v100:16x4,k80:8x4' "
    "(COUNT and GPUS integers >= 1; TYPE letters, digits, '_', '.', '-')"
)
MAX_SHORTHAND_NODES = MAX_NODES

_TYPE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*", re.ASCII)
_INT_RE = re.compile(r"[0-9]+", re.ASCII)


class ShorthandError(ClusterFormatError):
    """A malformed shorthand; ``reason`` is the message without the grammar reminder."""

    def __init__(self, text: str, reason: str) -> None:
        super().__init__(f"bad cluster shorthand {text!r}: {reason}; expected {SHORTHAND_GRAMMAR}")
        self.reason = reason


def _fail(text: str, token: str, reason: str) -> ShorthandError:
    return ShorthandError(text, f"group {token!r}: {reason}")


def _positive(text: str, token: str, what: str, value: str) -> int:
    if not value:
        raise _fail(text, token, f"{what} is missing")
    if not _INT_RE.fullmatch(value):
        raise _fail(text, token, f"{what} {value!r} is not a decimal integer")
    number = int(value)
    if number < 1:
        raise _fail(text, token, f"{what} must be >= 1, got {number}")
    return number


def _parse_group(text: str, token: str) -> NodeGroup:
    body = token.strip()
    if not body:
        raise _fail(text, token, "empty group (stray comma?)")
    gpu_type = DEFAULT_GPU_TYPE
    if ":" in body:
        gpu_type, body = body.split(":", 1)
        if not _TYPE_RE.fullmatch(gpu_type):
            raise _fail(text, token, f"TYPE {gpu_type!r} is not a valid GPU type name")
        if ":" in body:
            raise _fail(text, token, "more than one ':'")
    parts = re.split(r"[xX]", body)
    if len(parts) != 2:
        reason = "missing 'x' between COUNT and GPUS" if len(parts) == 1 else "more than one 'x'"
        raise _fail(text, token, reason)
    count = _positive(text, token, "COUNT", parts[0])
    gpus = _positive(text, token, "GPUS", parts[1])
    return NodeGroup(count=count, gpus=gpus, gpu_type=gpu_type)


def _canonical(groups: list[NodeGroup]) -> str:
    return ",".join(
        f"{g.count}x{g.gpus}"
        if g.gpu_type == DEFAULT_GPU_TYPE
        else f"{g.gpu_type}:{g.count}x{g.gpus}"
        for g in groups
    )


def parse_shorthand(text: str) -> ClusterSpec:
    """The cluster a shorthand string describes (grammar in the module docstring).

    The cluster is named by the canonical form of ``text`` (blanks removed, lower-case ``x``)
    and its ``source`` is ``"shorthand"``. Raises :class:`ShorthandError` (a
    ``ClusterFormatError``, so a ValueError) naming the first bad group and the grammar, or when
    the cluster is over the limits of :mod:`dlsched.cluster.limits` (nodes, GPUs per node,
    GPUs).
    """
    if not text.strip():
        raise ShorthandError(text, "it is empty")
    groups = [_parse_group(text, token) for token in text.split(",")]
    problem = size_problem(groups)
    if problem is not None:
        raise ShorthandError(text, f"{problem[1]} (see docs/cluster-format.md)")
    total_nodes = sum(g.count for g in groups)
    total_gpus = sum(g.count * g.gpus for g in groups)
    return ClusterSpec(
        name=_canonical(groups),
        nodes=tuple(expand_groups(groups)),
        description=f"{total_nodes} nodes, {total_gpus} GPUs (shorthand)",
        source="shorthand",
    )
