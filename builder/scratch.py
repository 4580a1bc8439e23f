"""Cache entries that builds sharing one cache can write at the same time.

Every scratch file and folder is named after its target plus this process's id and a random suffix, so
no two processes ever write the same scratch path; it is written whole and then renamed into place,
which is atomic on one file system: a reader sees the old entry or the new one, never half of one. Two
builds that make the same entry make the same bytes, so whichever rename lands last is as good as the
first; a folder cannot be renamed over a non-empty one, so there the loser keeps the winner's.
"""

from __future__ import annotations

import errno
import fcntl
import functools
import hashlib
import os
import secrets
import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

SCRATCH_SUFFIX = ".partial"


def scratch_path(target: Path) -> Path:
    """A name beside `target` that only this process and this call use."""
    return target.with_name(f".{target.name}.{os.getpid()}-{secrets.token_hex(4)}{SCRATCH_SUFFIX}")


def write_atomically(target: Path, write: Callable[[Path], object]) -> None:
    """`write` fills a scratch file, which then replaces `target` in one step (or is removed on error)."""
    scratch = scratch_path(target)
    try:
        write(scratch)
        os.replace(scratch, target)
    except BaseException:
        scratch.unlink(missing_ok=True)
        raise


def write_text_atomically(target: Path, text: str) -> None:
    write_atomically(target, lambda scratch: scratch.write_text(text, encoding="utf-8"))


def make_folder_atomically(
    target: Path, complete: Callable[[Path], bool], fill: Callable[[Path], object]
) -> None:
    """Make the folder `target` by `fill`ing a scratch folder and renaming it into place, unless a
    `complete` one is there already. When another process renames its folder there first, that folder
    is kept and this one's work is dropped; an incomplete leftover is moved aside before it is removed,
    so no reader ever sees it half deleted."""
    if complete(target):
        return
    if target.exists() and not complete(target):  # damaged; checked again: another build may just have won
        aside = scratch_path(target)
        try:
            target.rename(aside)
        except FileNotFoundError:  # another process moved it first
            pass
        shutil.rmtree(aside, ignore_errors=True)
    scratch = scratch_path(target)
    try:
        fill(scratch)
        try:
            scratch.rename(target)
        except OSError as error:
            if error.errno not in (errno.ENOTEMPTY, errno.EEXIST) or not complete(target):
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@contextmanager
def exclusive(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive lock on `lock_file` for the block: the other build waits for it (the kernel
    drops the lock when a process dies, so a killed build never leaves it held)."""
    with open(lock_file, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# Cache entries this process made, by what makes them: (path, sha256 of its bytes) for each file.
_MADE: dict[tuple[str, ...], list[tuple[Path, str]]] = {}


def record_made(key: tuple[str, ...], files: Sequence[Path]) -> None:
    """Note that this process made `files` (the entry `key` names, such as a model's export) just now."""
    _MADE[key] = [(Path(path), _sha256(Path(path))) for path in files]


def copy_made(key: tuple[str, ...], targets: Sequence[Path]) -> bool:
    """Copy the files this process made for `key` onto `targets`, in order, and say so; False, copying
    nothing, where none were made or one no longer holds the bytes it was made with. A build with a new
    cache (the test suite makes dozens in one process) so skips seconds of exporting a model it already has."""
    made = _MADE.get(key)
    if not made or len(made) != len(targets):
        return False
    if any(not path.is_file() or _sha256(path) != digest for path, digest in made):
        return False
    for (path, _), target in zip(made, targets, strict=True):
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(target, functools.partial(shutil.copyfile, path))
    return True


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
