"""The site folder is replaced in one step, so visitors and `serve` never see half a site.

A build writes into a staging folder beside the target (`.site.building-<pid>`, same file system)
and, once every file is written, swaps it in: on Linux with one atomic `renameat2(RENAME_EXCHANGE)`,
elsewhere with two renames. A build that dies before the swap leaves the old site as it was; the next
build removes the dead build's staging folder. Files the build does not make (a CNAME, a .nojekyll
someone put there) are carried over into the new site by hard link.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

STAGING = ".building-"
RETIRED = ".replaced-"
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


@contextmanager
def staged_site(out_dir: Path) -> Iterator[Path]:
    """Yield an empty folder to write the new site into; swap it in when the block ends normally."""
    out_dir = Path(out_dir).absolute()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    remove_dead_leftovers(out_dir)
    staging = _sibling(out_dir, STAGING)
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        yield staging
        if out_dir.is_dir():
            _carry_over(out_dir, staging)
        _swap_in(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def remove_dead_leftovers(out_dir: Path) -> None:
    """Staging and retired folders of builds that are no longer running (killed, or crashed)."""
    for path in out_dir.parent.glob(f".{out_dir.name}.*"):
        kind, _, pid = path.name.removeprefix(f".{out_dir.name}").rpartition("-")
        if f"{kind}-" in (STAGING, RETIRED) and pid.isdigit() and not _running(int(pid)):
            if kind + "-" == RETIRED and not out_dir.exists():
                path.rename(out_dir)  # killed between the two renames of the fallback swap
            else:
                shutil.rmtree(path, ignore_errors=True)


def _sibling(out_dir: Path, kind: str) -> Path:
    return out_dir.with_name(f".{out_dir.name}{kind}{os.getpid()}")


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _carry_over(old: Path, new: Path) -> None:
    for entry in old.iterdir():
        target = new / entry.name
        if target.exists() or target.is_symlink():
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, target, symlinks=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(entry, target)


def _link_or_copy(source: str | Path, target: str | Path) -> None:
    try:
        os.link(source, target, follow_symlinks=False)
    except OSError:
        shutil.copy2(source, target, follow_symlinks=False)


def _swap_in(staging: Path, out_dir: Path) -> None:
    if not out_dir.exists():
        staging.rename(out_dir)
        return
    if _exchange(staging, out_dir):
        shutil.rmtree(staging, ignore_errors=True)  # now holds the old site
        return
    retired = _sibling(out_dir, RETIRED)
    out_dir.rename(retired)
    staging.rename(out_dir)
    shutil.rmtree(retired, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically; False where the system offers no such call."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL):  # old kernel, or a file system without exchange
        return False
    raise OSError(code, os.strerror(code), str(b))
