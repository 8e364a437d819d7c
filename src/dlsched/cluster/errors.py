"""The one exception raised for malformed cluster descriptions (shorthand, TOML, names)."""

from __future__ import annotations


class ClusterFormatError(ValueError):
    """A cluster description that cannot be turned into a ``ClusterSpec``.

    A ``ValueError`` so callers that only care about "bad input" need not import this module.
    The message names where the problem is (file, ``nodes[i]``, field or shorthand token) and
    what was expected.
    """
