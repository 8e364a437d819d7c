"""Request bodies of the service's API, validated by pydantic (a 422 names the bad field)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from dlsched.service.records import NewJob

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@+-]*$"
MAX_COMMAND_ARGS = 256
MAX_ARG_CHARS = 4096


class JobSubmission(BaseModel):
    """``POST /jobs``: a job to run. Unknown fields are rejected; numbers must be numbers."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, Field(min_length=1, max_length=128, pattern=NAME_PATTERN)]
    user: Annotated[str, Field(min_length=1, max_length=64, pattern=NAME_PATTERN)] = "anonymous"
    gpus: Annotated[int, Field(strict=True, ge=1, le=1_000_000)]
    command: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=MAX_ARG_CHARS)]],
        Field(min_length=1, max_length=MAX_COMMAND_ARGS),
    ]
    batch_size: Annotated[int | None, Field(strict=True, ge=1, le=1_000_000)] = None
    expected_duration_s: Annotated[
        float | None, Field(gt=0, le=365 * 86400, allow_inf_nan=False)
    ] = None

    def to_new_job(self) -> NewJob:
        return NewJob(
            name=self.name,
            user=self.user,
            gpus=self.gpus,
            command=tuple(self.command),
            batch_size=self.batch_size,
            expected_duration_s=self.expected_duration_s,
        )
