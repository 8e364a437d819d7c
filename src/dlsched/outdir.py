"""Output files and directories written whole or not at all.

A directory (run directories, reports) is built in a fresh sibling and renamed into place at
the end, so a crash never leaves half of one behind; an earlier directory of the same kind is
replaced, anything else is never deleted for it. A single file is written the same way
(:func:`write_file_atomic`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Callable, Collection
from pathlib import Path


def check_replaceable(
    out: Path, allowed: Collection[str], kind: str, error: type[ValueError] = ValueError
) -> None:
    """Raise ``error`` if ``out`` exists and is not a (possibly empty) directory holding only
    ``allowed`` file names: writing replaces whatever is at ``out``, and a directory holding
    anything else (``.``, a home directory, a folder of results) must never be deleted for it.
    ``kind`` names the directory in the message (e.g. "run directory")."""
    if not out.exists() and not out.is_symlink():
        return
    if out.is_symlink() or not out.is_dir():
        raise error(f"{out}: exists and is not a directory; refusing to replace it")
    others = sorted(p.name for p in out.iterdir() if p.name not in allowed)
    if others:
        shown = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
        raise error(
            f"{out}: exists and is not a dlsched {kind} (holds {shown}); refusing to replace it"
        )


def write_directory(
    out: str | Path,
    allowed: Collection[str],
    kind: str,
    fill: Callable[[Path], None],
    error: type[ValueError] = ValueError,
) -> Path:
    """Create ``out`` atomically: ``fill(tmp)`` writes the files into a fresh sibling, which
    then replaces ``out`` (checked with :func:`check_replaceable` first). If anything fails,
    the sibling is removed and an earlier ``out`` is left as it was."""
    out = Path(out)
    check_replaceable(out, allowed, kind, error)
    out.parent.mkdir(parents=True, exist_ok=True)
    # os.mkdir (unlike tempfile.mkdtemp, which makes 0700 directories) honours the umask, so
    # the directory gets the permissions any directory the user creates would get.
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}-{uuid.uuid4().hex}"
    os.mkdir(tmp)
    try:
        fill(tmp)
        old = None
        if out.exists():
            old = out.parent / f".{out.name}.old-{os.getpid()}-{uuid.uuid4().hex}"
            os.replace(out, old)
        try:
            os.replace(tmp, out)
        except BaseException:
            if old is not None:
                os.replace(old, out)
            raise
        if old is not None:
            shutil.rmtree(old)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def write_file_atomic(
    path: str | Path, data: bytes | str, write: Callable[[Path], None] | None = None
) -> Path:
    """Write ``data`` (text as UTF-8), or whatever ``write(tmp)`` writes, to a fresh hidden
    sibling of ``path`` and rename it into place: readers see the old file or the new one,
    never a partial one. The file gets the permissions the umask gives any new file."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    # A sibling, because os.replace is atomic only within one file system.
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        if write is not None:
            write(tmp)
        else:
            tmp.write_bytes(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return target
