"""``KEY=VALUE`` items of a repeatable option (``--policy-opt``, ``--placement-opt``, ...).

Standard library only: the command line's light modules import it.
"""

from __future__ import annotations

from collections.abc import Sequence


def parse_pairs(items: Sequence[str], flag: str) -> dict[str, str]:
    """Read repeated ``KEY=VALUE`` items of ``flag`` into a dict, keys and values stripped; a
    malformed item or a key given twice raises ValueError naming the flag (a repeat is never
    silently dropped)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"{flag} expects KEY=VALUE, got {item!r}")
        if key in out:
            raise ValueError(f"{flag} gives {key!r} twice ({out[key]!r} and {value.strip()!r})")
        out[key] = value.strip()
    return out
