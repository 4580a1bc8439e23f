"""Ctrl-C stops a build even where it lands in code that swallows it.

Python raises KeyboardInterrupt wherever the main thread is when SIGINT arrives. Landing in a
multiprocessing finalizer (the parse pool shutting down), it is printed as "Exception ignored" and lost:
a build in CI went on to write its site and exit 0. So the handler also remembers it, and the pipeline
asks between stages.
"""

from __future__ import annotations

import signal
from types import FrameType

_heard = False


def _on_ctrl_c(signum: int, frame: FrameType | None) -> None:
    global _heard
    _heard = True
    raise KeyboardInterrupt


def listen() -> None:
    """Take SIGINT over from Python's default handler; where it is ignored (a shell's background job),
    leave it so."""
    global _heard
    _heard = False
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_ctrl_c)


def stop_if_heard() -> None:
    """Raise KeyboardInterrupt if a Ctrl-C came and something swallowed it."""
    if _heard:
        raise KeyboardInterrupt
