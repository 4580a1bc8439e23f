"""Ctrl-C stops a build even where it lands in code that swallows it.

Python raises KeyboardInterrupt wherever the main thread is when SIGINT arrives. Landing in a
multiprocessing finalizer (the parse pool shutting down), it is printed as "Exception ignored" and lost:
a build in CI went on to write its site and exit 0. So the handler also remembers it, and the pipeline
asks between stages.
Landing while a parse process is being handed its job, it would leave that process half-told, and the
process prints a traceback of its own (EOFError) under the build's one line: such steps hold it back
until they end (`held_back`).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_heard = False
_held_back = 0  # how many `held_back()` blocks the main thread is in


def _on_ctrl_c(signum: int, frame: FrameType | None) -> None:
    global _heard
    _heard = True
    if not _held_back:
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


@contextmanager
def held_back() -> Iterator[None]:
    """A Ctrl-C during the block stops the build when the block ends, not inside it."""
    global _held_back
    _held_back += 1
    try:
        yield
    finally:
        _held_back -= 1
    stop_if_heard()
