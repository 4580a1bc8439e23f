"""Worker processes end when the build ends, however it ends.

A pool's workers outlive a build killed with SIGKILL: they finish their jobs, then wait for work that
never comes. Each worker therefore asks the kernel for SIGKILL when its parent dies (Linux
`prctl(PR_SET_PDEATHSIG)`); where there is no such call, a thread watches for the parent to go.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time

_PR_SET_PDEATHSIG = 1
_WATCH_INTERVAL = 0.5  # seconds


def die_with_parent(parent_pid: int) -> None:
    """Pool initializer: end this process as soon as `parent_pid` (its parent) is gone. Ctrl-C reaches
    the whole process group; the parent alone answers it (and ends its workers), so workers ignore it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    else:
        threading.Thread(target=_watch, args=(parent_pid,), daemon=True).start()
    if os.getppid() != parent_pid:  # the parent died before the request took effect
        os._exit(1)


def _watch(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(_WATCH_INTERVAL)
    os._exit(1)
