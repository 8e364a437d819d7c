"""Who a request comes from: the service's bearer tokens and the tenant each one names.

Without a token file the service has one token (:mod:`dlsched.service.api.auth`), which acts as
the admin: mutations need it, reads need nothing. With a token file (``dlsched serve --tokens``)
every ``/jobs`` request needs a token; a tenant's token sees and cancels only that tenant's
jobs and submits only to its own queues, the admin token sees everything. The file is TOML,
readable by its owner only (mode 0600)::

    admin_token = "..."

    [tenants.team-a]
    token = "..."
    queues = ["team-a"]      # LocalQueue names this tenant may submit to

Every known token is compared with the one presented, each in constant time
(:func:`hmac.compare_digest`), so neither a token's prefix nor its position leaks through
timing.

Tenant names (:func:`check_tenant_names`) must not be empty, hold surrounding spaces or
control/format characters (a zero-width joiner, a right-to-left override), be ``admin`` (the
name the event log gives the admin) or look like another tenant's: two names are the same
when their NFKC case-folded forms (:func:`tenant_key`) are equal, so ``Team-A``, ``team-a``
and ``ｔｅａｍ-ａ`` (full-width) are one name. Confusables across scripts (a Cyrillic ``а``
for a Latin ``a``) are not in that rule.
"""

from __future__ import annotations

import hmac
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlsched.safe_load import InputError, load_toml, read_text, shown
from dlsched.service.api.auth import TokenFileError, check_private

MIN_TOKEN_CHARS = 16
"""Shortest token a token file may hold (a short one could be guessed)."""
RESERVED_TENANT = "admin"
"""The name events give the admin; no tenant may take it (in any case or form)."""
MAX_TENANT_CHARS = 64
"""Longest tenant name."""
MAX_TOKEN_FILE_BYTES = 2**20
"""Largest token file."""


def tenant_key(name: str) -> str:
    """The form two tenant names are compared in: NFKC, case-folded, NFKC again (Unicode's
    NFKC_Casefold up to default-ignorable characters, which :func:`check_tenant_names`
    refuses)."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


def tenant_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a tenant on its own (None: it can); see the module
    docstring."""
    if not name or not name.strip():
        return "an empty name"
    if len(name) > MAX_TENANT_CHARS:
        return f"a name of {len(name)} characters (at most {MAX_TENANT_CHARS})"
    if name != name.strip():
        return "spaces around the name"
    if any(unicodedata.category(ch).startswith(("C", "Z")) and ch != " " for ch in name):
        return "a control, format or separator character in the name"
    if tenant_key(name) == RESERVED_TENANT:
        return f"{RESERVED_TENANT!r} names the admin"
    return None


def check_tenant_names(names: list[str], where: str) -> None:
    """:class:`TokenFileError` naming ``where`` and the tenant for a name
    :func:`tenant_name_problem` refuses or one that looks like an earlier one (equal
    :func:`tenant_key`)."""
    seen: dict[str, str] = {}
    for name in names:
        problem = tenant_name_problem(name)
        if problem is not None:
            raise TokenFileError(
                f"{where}: tenants.{shown(name)}: {problem}; expected a name other than "
                f"{RESERVED_TENANT!r}, without control characters, distinct from the others"
            )
        key = tenant_key(name)
        if key in seen:
            raise TokenFileError(
                f"{where}: tenants.{shown(name)}: looks like tenant {seen[key]!r} (the same "
                "after Unicode NFKC normalisation and case folding); expected distinct names"
            )
        seen[key] = name


@dataclass(frozen=True, slots=True)
class Principal:
    """The sender of a request: a tenant (``tenant`` its name, ``queues`` the LocalQueues it
    may submit to) or the admin (``tenant`` None), who may do everything."""

    tenant: str | None
    queues: frozenset[str] = frozenset()

    @property
    def admin(self) -> bool:
        return self.tenant is None

    @property
    def label(self) -> str:
        """The name the event log records for this sender."""
        return "admin" if self.tenant is None else self.tenant

    def may_see(self, tenant: str | None) -> bool:
        """Whether this sender may read or cancel a job of ``tenant``."""
        return self.admin or tenant == self.tenant


ADMIN = Principal(None)


@dataclass(frozen=True)
class Tokens:
    """The tokens a service accepts. ``tenanted`` is False for the single-token service (the
    one token is the admin's and reads need none)."""

    admin_token: str
    tenants: tuple[tuple[str, Principal], ...] = ()
    tenanted: bool = False

    @classmethod
    def single(cls, token: str) -> Tokens:
        """The single-token service's tokens: ``token`` is the admin's."""
        return cls(token)

    def identify(self, header: str | None) -> Principal | None:
        """The sender an ``Authorization: Bearer <token>`` header names; None if the header
        is missing or malformed or the token unknown. Compares against every token."""
        if not header:
            return None
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer":
            return None
        presented = given.strip().encode()
        found: Principal | None = None
        # No early exit: the time taken must not depend on which token matched.
        if hmac.compare_digest(presented, self.admin_token.encode()):
            found = ADMIN
        for token, principal in self.tenants:
            if hmac.compare_digest(presented, token.encode()) and found is None:
                found = principal
        return found

    def tenant_queues(self) -> dict[str, frozenset[str]]:
        """Each tenant's queues."""
        return {p.label: p.queues for _, p in self.tenants}


def _string(path: Path, where: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TokenFileError(f"{path}: {where}: expected a string, got {type(value).__name__}")
    if len(value) < MIN_TOKEN_CHARS or value != value.strip():
        raise TokenFileError(
            f"{path}: {where}: expected a token of at least {MIN_TOKEN_CHARS} characters "
            "without surrounding spaces"
        )
    return value


def read_tokens(path: Path) -> Tokens:
    """The tokens of token file ``path`` (module docstring). :class:`TokenFileError`, naming
    the file and field, if it is missing, readable by others, not TOML (or beyond
    :mod:`dlsched.safe_load`'s limits), lacks ``admin_token`` or a tenant's
    ``token``/``queues``, has unknown keys, gives one token twice, or names a tenant
    :func:`check_tenant_names` refuses."""
    path = Path(path)
    try:
        check_private(path)
        data = load_toml(read_text(path, MAX_TOKEN_FILE_BYTES), str(path))
    except OSError as exc:
        raise TokenFileError(f"{path}: cannot read the token file: {exc.strerror}") from None
    except InputError as exc:
        raise TokenFileError(f"{exc} (a TOML token file)") from None
    unknown = sorted(set(data) - {"admin_token", "tenants"})
    if unknown:
        raise TokenFileError(
            f"{path}: unknown key {unknown[0]!r}; expected admin_token and [tenants.NAME]"
        )
    if "admin_token" not in data:
        raise TokenFileError(f"{path}: admin_token: required")
    admin = _string(path, "admin_token", data["admin_token"])
    tenants = data.get("tenants", {})
    if not isinstance(tenants, dict) or not tenants:
        raise TokenFileError(f"{path}: tenants: expected at least one [tenants.NAME] table")
    check_tenant_names(list(tenants), str(path))
    seen = {admin: "admin_token"}
    entries: list[tuple[str, Principal]] = []
    for name, table in tenants.items():
        where = f"tenants.{name}"
        if not isinstance(table, dict):
            raise TokenFileError(f"{path}: {where}: expected a table with token and queues")
        extra = sorted(set(table) - {"token", "queues"})
        if extra:
            raise TokenFileError(f"{path}: {where}.{extra[0]}: unknown key; expected token, queues")
        for key in ("token", "queues"):
            if key not in table:
                raise TokenFileError(f"{path}: {where}.{key}: required")
        token = _string(path, f"{where}.token", table["token"])
        if token in seen:
            raise TokenFileError(f"{path}: {where}.token: the same token as {seen[token]}")
        seen[token] = f"{where}.token"
        queues = table["queues"]
        if not isinstance(queues, list) or not all(isinstance(q, str) and q for q in queues):
            raise TokenFileError(f"{path}: {where}.queues: expected a list of queue names")
        entries.append((token, Principal(name, frozenset(queues))))
    return Tokens(admin, tuple(entries), tenanted=True)
