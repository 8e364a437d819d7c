"""The service's bearer token: generated at first start, kept in a file only its owner reads."""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from dlsched.backends.jobfiles import private_dir


class TokenFileError(ValueError):
    """The token file exists but cannot be used safely; the message names it."""


def check_private(path: Path) -> None:
    """:class:`TokenFileError` unless only its owner may read or write file ``path``."""
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise TokenFileError(
            f"{path}: token file has mode {mode:o}; expected 600 (chmod 600 {path})"
        )


def load_or_create_token(path: Path) -> str:
    """The token stored at ``path``; a new random one (written with mode 0600, atomically)
    when the file does not exist. Refuses a file that others may read or that is empty."""
    path = Path(path)
    if path.exists():
        check_private(path)
        token = path.read_text(encoding="utf-8").strip()
        if not token:
            raise TokenFileError(f"{path}: token file is empty")
        return token
    token = secrets.token_urlsafe(32)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        private_dir(path.parent)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(token + "\n")
        os.replace(tmp, path)
    except OSError as exc:
        raise TokenFileError(f"{path}: cannot write the token file: {exc.strerror}") from None
    return token
