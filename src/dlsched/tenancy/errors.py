"""The one error type of tenancy input."""

from __future__ import annotations


class TenancyError(ValueError):
    """Queue manifests, a queue map or a job's queue are not usable; the message names the
    file, document or field and what was expected."""
