"""Parsing a user's ``--cluster`` text into a :class:`ClusterSpec`: the one entry point.

The formats themselves live in :mod:`dlsched.cluster.shorthand`, :mod:`dlsched.cluster.toml_io`
and :mod:`dlsched.cluster.builtin`; this module only decides which one the text is.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from dlsched.cluster.builtin import BUILTIN_CLUSTERS, builtin_cluster
from dlsched.cluster.errors import ClusterFormatError
from dlsched.cluster.shorthand import SHORTHAND_GRAMMAR, ShorthandError, parse_shorthand
from dlsched.cluster.spec import ClusterSpec
from dlsched.cluster.toml_io import read_cluster_toml

CLUSTER_FILE_SUFFIX = ".toml"


def resolve_cluster(text: str) -> ClusterSpec:
    """The cluster ``text`` names, tried in this order:

    1. a built-in cluster name (case-insensitive, see ``list_builtin_clusters``);
    2. a path ending in ``.toml`` (``~`` expanded): the cluster file there;
    3. a shorthand such as ``32x8`` or ``v100:16x4,k80:8x4``.

    Raises :class:`ClusterFormatError` (a ValueError) for a missing or invalid ``.toml`` file,
    and otherwise one that lists the built-in names, the file rule and the shorthand grammar,
    with the reason ``text`` is not a valid shorthand.
    """
    wanted = text.strip()
    if wanted.lower() in BUILTIN_CLUSTERS:
        return builtin_cluster(wanted)
    path = _expanded(wanted)
    if path.suffix.lower() == CLUSTER_FILE_SUFFIX:
        if not _is_file(path):
            raise ClusterFormatError(f"cluster file {str(path)!r} does not exist")
        return read_cluster_toml(path)
    try:
        return parse_shorthand(wanted)
    except ShorthandError as exc:
        reason = exc.reason
    raise ClusterFormatError(_unresolved_message(text, wanted, path, reason))


def _expanded(text: str) -> Path:
    """``text`` as a path with ``~`` expanded (as given when ``~user`` names no user)."""
    try:
        return Path(text).expanduser()
    except RuntimeError:
        return Path(text)


def _is_file(path: Path) -> bool:
    """Whether ``path`` is a file (False for a name no file can have, e.g. one with NUL)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _unresolved_message(text: str, wanted: str, path: Path, shorthand_reason: str) -> str:
    names = ", ".join(BUILTIN_CLUSTERS)
    close = difflib.get_close_matches(wanted.lower(), list(BUILTIN_CLUSTERS), n=1)
    builtin_hint = f" (did you mean {close[0]!r}?)" if close else ""
    file_hint = (
        f" ({str(path)!r} exists but does not end in {CLUSTER_FILE_SUFFIX})"
        if wanted and _is_file(path)
        else ""
    )
    return (
        f"cannot resolve cluster {text!r}; expected one of:\n"
        f"  - a built-in cluster: {names}{builtin_hint}\n"
        f"  - a path to a cluster file ending in {CLUSTER_FILE_SUFFIX}{file_hint}\n"
        f"  - a shorthand {SHORTHAND_GRAMMAR}; as a shorthand: {shorthand_reason}"
    )
