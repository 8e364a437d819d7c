"""Which LocalQueue, and which WorkloadPriorityClass, each trace job goes to.

A queue map is a small TOML file::

    default = "research/shared"     # optional: a job nothing else maps
    [vc]
    vc-a = "team-a/main"            # LocalQueue NAMESPACE/NAME (or NAME when unique)
    [user]
    alice = "team-a/urgent"         # a user's mapping wins over its VC's
    [priority_class.vc]
    vc-a = "high"                   # WorkloadPriorityClass names
    [priority_class.user]
    bob = "low"

Without a map, a job goes to the LocalQueue named after its VC (one queue per VC, in whatever
namespace holds it) at priority 0. A job that maps to no LocalQueue is an error naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlsched.safe_load import InputError, load_toml, read_text
from dlsched.tenancy.errors import TenancyError
from dlsched.tenancy.model import Tenancy

_KEYS = {"default", "vc", "user", "priority_class"}


@dataclass(frozen=True)
class QueueMap:
    """Trace VC/user -> LocalQueue reference and priority class name (module docstring)."""

    default: str | None = None
    by_vc: Mapping[str, str] = field(default_factory=dict)
    by_user: Mapping[str, str] = field(default_factory=dict)
    priority_by_vc: Mapping[str, str] = field(default_factory=dict)
    priority_by_user: Mapping[str, str] = field(default_factory=dict)
    source: str = "<default: one LocalQueue per VC>"

    def queue_ref(self, vc: str | None, user: str | None) -> str | None:
        """The LocalQueue a job of ``vc`` and ``user`` goes to (None: none named)."""
        if user is not None and user in self.by_user:
            return self.by_user[user]
        if vc is not None and vc in self.by_vc:
            return self.by_vc[vc]
        if self.default is not None:
            return self.default
        if not self.by_vc and not self.by_user:
            return vc
        return None

    def priority_class(self, vc: str | None, user: str | None) -> str | None:
        """The WorkloadPriorityClass of a job (None: priority 0)."""
        if user is not None and user in self.priority_by_user:
            return self.priority_by_user[user]
        if vc is not None:
            return self.priority_by_vc.get(vc)
        return None

    def check(self, tenancy: Tenancy) -> None:
        """:class:`TenancyError` for a queue or priority class the manifests do not define."""
        for table, refs in (("vc", self.by_vc), ("user", self.by_user)):
            for key, ref in refs.items():
                self._named(tenancy, f"[{table}] {key}", lambda r=ref: tenancy.local_queue(r))
        if self.default is not None:
            self._named(tenancy, "default", lambda: tenancy.local_queue(self.default or ""))
        for table, names in (("vc", self.priority_by_vc), ("user", self.priority_by_user)):
            for key, name in names.items():
                self._named(
                    tenancy, f"[priority_class.{table}] {key}", lambda n=name: tenancy.priority(n)
                )

    def _named(self, tenancy: Tenancy, where: str, lookup: Any) -> None:
        try:
            lookup()
        except TenancyError as exc:
            detail = str(exc).removeprefix(f"{tenancy.source}: ")
            raise TenancyError(f"{self.source}: {where}: {detail}") from None


def _table(path: str, data: Mapping[str, Any], key: str) -> dict[str, str]:
    raw = data.get(key, {})
    if not isinstance(raw, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) and v for k, v in raw.items()
    ):
        raise TenancyError(f"{path}: [{key}]: expected a table of names to names, got {raw!r}")
    return dict(raw)


def read_queue_map(path: str | Path) -> QueueMap:
    """The queue map of a TOML file (module docstring); :class:`TenancyError` naming the file
    and key when it is not one."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"queue map {p}: no such file")
    try:
        data = load_toml(read_text(p), str(p))
    except InputError as exc:
        raise TenancyError(str(exc)) from None
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise TenancyError(
            f"{p}: unknown key {unknown[0]!r}; a queue map has {', '.join(sorted(_KEYS))}"
        )
    default = data.get("default")
    if default is not None and (not isinstance(default, str) or not default):
        raise TenancyError(f"{p}: default: expected a LocalQueue name, got {default!r}")
    prio = data.get("priority_class", {})
    if not isinstance(prio, Mapping) or set(prio) - {"vc", "user"}:
        raise TenancyError(
            f"{p}: [priority_class]: expected the tables [priority_class.vc] and "
            f"[priority_class.user], got {prio!r}"
        )
    return QueueMap(
        default,
        _table(str(p), data, "vc"),
        _table(str(p), data, "user"),
        _table(f"{p} [priority_class]", prio, "vc"),
        _table(f"{p} [priority_class]", prio, "user"),
        str(p),
    )
