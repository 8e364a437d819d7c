"""The one rule for everything a command writes, and how it is written.

The rule (README, "Command-line conventions"):

- A command's output that already exists is replaced only when the caller says so (``force``,
  the CLI's ``--force``), and then only if it is an output of the same kind: a directory
  holding nothing but the files that kind writes (or nothing at all), or a file the kind
  recognizes (:class:`FileKind`). Anything else at that path is never deleted for it. An
  empty directory may always become an output.
- An output never replaces one of the command's inputs, nor a directory holding one, even
  with ``force``.
- An output is written whole or not at all: into a hidden sibling that is renamed into place
  when complete. A write interrupted by a crash leaves only that hidden sibling behind; the
  next write to the same path removes it (or, if the crash came between the two renames of a
  directory replacement, puts the earlier output back first).

:class:`DirKind` and :class:`FileKind` describe each kind of output; commands call their
``check`` before any work (so a refused output costs nothing) and write through ``write``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import uuid
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

FORCE_HINT = "pass --force to replace it"


class OutputError(ValueError):
    """An output path that may not be written (see the module docstring); the message says
    why and what to do instead."""


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())[:32] or "host"


def _temp_name(name: str, role: str) -> str:
    # Host and process in the name let a later write tell a crashed writer's leftovers (its
    # process is gone) from a write still in progress.
    return f".{name}.{role}-{_host()}-{os.getpid()}-{uuid.uuid4().hex[:12]}"


def _leftover_pid(entry: str, name: str, role: str) -> int | None:
    """The writer's process id if ``entry`` is a ``role`` sibling of ``name`` written on this
    host, else None."""
    prefix = f".{name}.{role}-{_host()}-"
    if not entry.startswith(prefix):
        return None
    pid, _, _ = entry[len(prefix) :].partition("-")
    return int(pid) if pid.isdigit() else None


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another user's
    return False


def clear_leftovers(out: Path) -> None:
    """Remove what crashed writes of ``out`` left beside it (module docstring). A directory
    moved aside by a replacement that crashed before the new one took its place is renamed back
    to ``out``."""
    parent = out.parent
    if not parent.is_dir():
        return
    for entry in sorted(os.listdir(parent)):
        path = parent / entry
        for role in ("old", "tmp"):
            pid = _leftover_pid(entry, out.name, role)
            if pid is None or not _gone(pid):
                continue
            if role == "old" and not out.exists() and not out.is_symlink():
                os.replace(path, out)
            elif path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()


def _check_inputs(
    out: Path, inputs: Iterable[str | os.PathLike[str]], error: type[ValueError]
) -> None:
    target = out.resolve()
    for item in inputs:
        source = Path(item).expanduser()
        if not source.exists():
            continue
        source = source.resolve()
        if source == target:
            raise error(f"{out}: is an input of this command; write the output elsewhere")
        if target in source.parents:
            raise error(
                f"{out}: holds {item}, an input of this command; write the output elsewhere"
            )


@dataclass(frozen=True)
class DirKind:
    """A kind of output directory: ``name`` for messages, the ``files`` it may hold, and the
    error class its refusals raise."""

    name: str
    files: Collection[str]
    error: type[ValueError] = OutputError

    def check(
        self, out: str | Path, force: bool, inputs: Iterable[str | os.PathLike[str]] = ()
    ) -> None:
        """Raise ``error`` if writing ``out`` would break the rule (module docstring). What
        crashed writes of ``out`` left behind is cleared first (:func:`clear_leftovers`), so
        the answer is about the output as the last complete write left it."""
        out = Path(out)
        clear_leftovers(out)
        _check_inputs(out, inputs, self.error)
        if not out.exists() and not out.is_symlink():
            return
        if out.is_symlink() or not out.is_dir():
            raise self.error(f"{out}: exists and is not a directory; refusing to replace it")
        names = [p.name for p in out.iterdir()]
        others = sorted(n for n in names if n not in self.files)
        if others:
            shown = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
            raise self.error(
                f"{out}: exists and is not a dlsched {self.name} (holds {shown}); "
                "refusing to replace it"
            )
        if names and not force:
            raise self.error(f"{out}: already exists ({self.name}); {FORCE_HINT}")

    def write(self, out: str | Path, fill: Callable[[Path], None], force: bool = False) -> Path:
        """Create ``out``: ``fill(tmp)`` writes the files into a fresh hidden sibling, which
        then takes the place of ``out`` (checked first, see :meth:`check`). If anything fails,
        the sibling is removed and an earlier ``out`` is left as it was."""
        out = Path(out)
        self.check(out, force)
        out.parent.mkdir(parents=True, exist_ok=True)
        # os.mkdir (unlike tempfile.mkdtemp, which makes 0700 directories) honours the umask,
        # so the directory gets the permissions any directory the user creates would get.
        tmp = out.parent / _temp_name(out.name, "tmp")
        os.mkdir(tmp)
        try:
            fill(tmp)
            old = None
            if out.exists():
                old = out.parent / _temp_name(out.name, "old")
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


@dataclass(frozen=True)
class FileKind:
    """A kind of output file: ``name`` for messages and ``recognize``, which says whether an
    existing file is one of this kind (and so may be replaced with ``force``)."""

    name: str
    recognize: Callable[[Path], bool]
    error: type[ValueError] = OutputError

    def check(
        self, out: str | Path, force: bool, inputs: Iterable[str | os.PathLike[str]] = ()
    ) -> None:
        """Raise ``error`` if writing ``out`` would break the rule (module docstring), after
        clearing what crashed writes of ``out`` left (:func:`clear_leftovers`)."""
        out = Path(out)
        clear_leftovers(out)
        _check_inputs(out, inputs, self.error)
        if not out.exists() and not out.is_symlink():
            return
        if out.is_dir():
            raise self.error(f"{out}: is a directory, expected a {self.name} to write")
        if not self.recognize(out):
            raise self.error(f"{out}: exists and is not a {self.name}; refusing to replace it")
        if not force:
            raise self.error(f"{out}: already exists ({self.name}); {FORCE_HINT}")

    def write(self, out: str | Path, write: Callable[[Path], None], force: bool = False) -> Path:
        """Write ``out`` through ``write(tmp)`` after :meth:`check` (see
        :func:`write_file_atomic`)."""
        out = Path(out)
        self.check(out, force)
        return write_file_atomic(out, b"", write)


def write_file_atomic(
    path: str | Path, data: bytes | str, write: Callable[[Path], None] | None = None
) -> Path:
    """Write ``data`` (text as UTF-8), or whatever ``write(tmp)`` writes, to a fresh hidden
    sibling of ``path`` and rename it into place: readers see the old file or the new one,
    never a partial one. The file gets the permissions the umask gives any new file. This is
    the primitive under every output; it replaces ``path`` unconditionally (its callers own
    the file, or checked it with a :class:`FileKind`)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    # A sibling, because os.replace is atomic only within one file system.
    tmp = target.with_name(_temp_name(target.name, "tmp"))
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
