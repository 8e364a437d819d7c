"""Request bodies of the service's API, validated by pydantic (a 422 names the bad field)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from dlsched.service.control.elastic_book import ElasticSpec
from dlsched.service.store.records import NewJob

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@+-]*$"
MAX_COMMAND_ARGS = 256
MAX_ARG_CHARS = 4096


def runnable_text(value: str) -> str:
    """``value`` if a process can receive it as an argument: no NUL byte (C strings end
    there) and valid Unicode (no lone surrogate, which has no UTF-8 encoding)."""
    if "\x00" in value:
        raise ValueError("contains a NUL byte, which no process argument can hold")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"not valid Unicode ({exc.reason} at character {exc.start})") from None
    return value


def _optional_text(value: str | None) -> str | None:
    return None if value is None else runnable_text(value)


Argument = Annotated[
    str, Field(min_length=1, max_length=MAX_ARG_CHARS), AfterValidator(runnable_text)
]
"""One command-line argument of a job (see :func:`runnable_text`)."""


class JobSubmission(BaseModel):
    """``POST /jobs``: a job to run. Unknown fields are rejected; numbers must be numbers.

    An elastic job (``elastic: true``, for a service running an elastic policy) also gives
    ``application`` (the profiled application whose performance model stands for it, e.g.
    ``cifar10``), ``batch_size`` (its per-GPU batch at ``gpus`` GPUs) and optionally
    ``max_gpus`` (default ``gpus``; the policy may give it up to that many). A rigid job gives
    neither ``application`` nor ``max_gpus``. ``queue`` is the LocalQueue to submit to, for a
    service with tenants (see :mod:`dlsched.service.api.tenants`)."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, Field(min_length=1, max_length=128, pattern=NAME_PATTERN)]
    user: Annotated[str, Field(min_length=1, max_length=64, pattern=NAME_PATTERN)] = "anonymous"
    gpus: Annotated[int, Field(strict=True, ge=1, le=1_000_000)]
    command: Annotated[list[Argument], Field(min_length=1, max_length=MAX_COMMAND_ARGS)]
    batch_size: Annotated[int | None, Field(strict=True, ge=1, le=1_000_000)] = None
    expected_duration_s: Annotated[
        float | None, Field(gt=0, le=365 * 86400, allow_inf_nan=False)
    ] = None
    elastic: Annotated[bool, Field(strict=True)] = False
    application: Annotated[
        str | None, Field(min_length=1, max_length=64), AfterValidator(_optional_text)
    ] = None
    max_gpus: Annotated[int | None, Field(strict=True, ge=1, le=1_000_000)] = None
    queue: Annotated[str | None, Field(min_length=1, max_length=128, pattern=NAME_PATTERN)] = None

    @model_validator(mode="after")
    def _elastic_fields(self) -> JobSubmission:
        if self.elastic:
            if self.application is None:
                raise ValueError("application: required for an elastic job")
            if self.batch_size is None:
                raise ValueError("batch_size: required for an elastic job (per-GPU batch)")
            if self.max_gpus is not None and self.max_gpus < self.gpus:
                raise ValueError(
                    f"max_gpus: {self.max_gpus} is below the requested gpus ({self.gpus})"
                )
        else:
            for name in ("application", "max_gpus"):
                if getattr(self, name) is not None:
                    raise ValueError(f"{name}: only for an elastic job (elastic=true)")
        return self

    def elastic_spec(self) -> ElasticSpec | None:
        """The elastic part of the submission (None for a rigid job)."""
        if not self.elastic or self.application is None or self.batch_size is None:
            return None
        return ElasticSpec(self.application, self.max_gpus or self.gpus, self.batch_size)

    def to_new_job(self, tenant: str | None = None, queue: str | None = None) -> NewJob:
        """The job to store, submitted by ``tenant`` to ``queue``."""
        return NewJob(
            name=self.name,
            user=self.user,
            gpus=self.gpus,
            command=tuple(self.command),
            batch_size=self.batch_size,
            expected_duration_s=self.expected_duration_s,
            tenant=tenant,
            queue=queue,
        )
