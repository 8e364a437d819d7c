"""Output directories written whole or not at all (run directories and reports).

A directory is built in a fresh sibling and renamed into place at the end, so a crash never
leaves half of one behind; an earlier directory of the same kind is replaced, anything else is
never deleted for it.
"""

from __future__ import annotations

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
