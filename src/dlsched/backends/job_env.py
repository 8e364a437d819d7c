"""The environment a job starts with: an allow-list, never the service's whole environment.

A job gets, from the service's environment, only ``PATH`` (``/usr/local/bin:/usr/bin:/bin``
when the service has none), ``LANG``, ``LC_*`` and ``TZ``, plus the names the operator
allows explicitly (``dlsched serve --job-env NAME``); ``HOME`` is the job's working
directory; the back end then adds the job's own variables (``DLSCHED_*`` of the workload
contract, ``CUDA_VISIBLE_DEVICES``). Nothing else reaches it: no token
(``DLSCHED_TOKEN``, ``DLSCHED_TOKEN_FILE``), no service URL, no store URL, no ``PG*``
variable, whatever the operator's shell exported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

ALLOWED_NAMES = ("PATH", "LANG", "TZ")
"""Variables copied from the service's environment when set."""
ALLOWED_PREFIXES = ("LC_",)
"""Prefixes of the variables copied from the service's environment (the locale's)."""
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
"""``PATH`` of a job whose service has none."""
NEVER_ALLOWED_PREFIXES = ("DLSCHED_", "PG")
"""Prefixes ``--job-env`` may not name: the service's own settings and secrets (a job's
``DLSCHED_*`` variables come from its back end, never from the service's environment)."""


def check_extra_names(names: Iterable[str]) -> tuple[str, ...]:
    """``names`` as a tuple; ValueError (one line, naming it) for a name that is not a
    variable name or starts with a prefix of :data:`NEVER_ALLOWED_PREFIXES`."""
    out = []
    for name in names:
        if (
            not name
            or not (name[0].isalpha() or name[0] == "_")
            or not all(c.isalnum() or c == "_" for c in name)
        ):
            raise ValueError(f"--job-env {name!r}: not an environment variable name")
        if name.upper().startswith(NEVER_ALLOWED_PREFIXES):
            raise ValueError(
                f"--job-env {name}: variables starting with "
                f"{' or '.join(NEVER_ALLOWED_PREFIXES)} never reach jobs"
            )
        out.append(name)
    return tuple(out)


def allowed(name: str, extra: Iterable[str] = ()) -> bool:
    """Whether variable ``name`` of the service's environment may reach a job."""
    return name in ALLOWED_NAMES or name.startswith(ALLOWED_PREFIXES) or name in extra


def base_environment(source: Mapping[str, str], extra: Iterable[str] = ()) -> dict[str, str]:
    """The variables of ``source`` (the service's environment) that reach a job: those
    :func:`allowed` lets through, with ``PATH`` defaulted."""
    keep = frozenset(extra)
    env = {k: v for k, v in source.items() if allowed(k, keep)}
    env.setdefault("PATH", DEFAULT_PATH)
    return env


def job_environment(
    source: Mapping[str, str],
    home: str,
    job_vars: Mapping[str, str],
    extra: Iterable[str] = (),
) -> dict[str, str]:
    """A job's whole environment: :func:`base_environment` of ``source``, ``HOME`` =
    ``home`` (its working directory), then ``job_vars`` (the back end's, which win)."""
    env = base_environment(source, extra)
    env["HOME"] = home
    env.update(job_vars)
    return env
