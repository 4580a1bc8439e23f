"""Each paper is parsed in its own short-lived process, under a time limit and a memory limit.

One small hostile PDF (a content stream that inflates ~1000:1) can keep the parser busy for minutes and
take gigabytes. MuPDF's C code cannot be interrupted from Python (`signal.alarm` waits for it to
return), so a paper over its time is ended from outside: its process gets SIGKILL. Its memory is capped
inside its process (RLIMIT_AS), so allocations past the limit fail there, in MuPDF or in Python, and not
in the build. Either way the paper becomes one Failure naming the limit; the other papers go on.
MuPDF has no cap of its own on a stream's decompressed size; the memory limit is what bounds it.

The defaults come from parsing every PDF of ../shared/arxiv-mirror one per process: the slowest takes
well under a second and none peaks above 100 MB, so the defaults leave room for papers a hundred times
longer on a busy machine while ending a hostile one within a minute.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import resource
import signal
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Generic, TypeVar

from builder import ctrl_c
from builder.models import ParseLimits
from builder.workers import die_with_parent

Job = TypeVar("Job")
Result = TypeVar("Result")


OVER_MEMORY = 75  # a parse process's exit status when an allocation failed under its memory limit
# How MuPDF reports an allocation that failed (its FZ_ERROR_SYSTEM, e.g. "code=2: calloc (4104 x 1 bytes)
# failed"): under the memory limit that, not a MemoryError, is what text extraction often raises.
_MUPDF_NO_MEMORY = re.compile(r"\b(?:malloc|calloc|realloc)\b.*\bfailed\b|out of memory", re.IGNORECASE)
_STEP_SECONDS = 0.2  # the longest one wait for finished processes lasts


@dataclass
class _Running(Generic[Job]):
    index: int
    job: Job
    process: multiprocessing.process.BaseProcess
    results: Connection
    deadline: float


def run_bounded(
    jobs: list[Job],
    work: Callable[[Job], Result],
    over_limit: Callable[[Job, str], Result],
    limits: ParseLimits,
    parallel: int,
) -> Iterator[tuple[int, Result]]:
    """(index, result) for every job as it finishes, at most `parallel` at a time, each in a fresh
    process; a job over a limit, or whose process dies, gives `over_limit(job, why)` instead. Processes
    still running when the caller stops (Ctrl-C, an error) are killed."""
    context = parse_processes()
    waiting = deque(enumerate(jobs))
    running: dict[Connection, _Running[Job]] = {}
    try:
        while waiting or running:
            # A Ctrl-C in the middle of starting or reaping a process would leave it half-told its job
            # (it prints a traceback of its own) or not yet ours to end: it waits for the step to end.
            with ctrl_c.held_back():
                _start(context, waiting, running, work, limits, parallel)
                finished = _reap(running, over_limit, limits)
            yield from finished
    finally:
        for entry in running.values():
            _end(entry)


def _start(
    context: multiprocessing.context.ForkServerContext,
    waiting: deque[tuple[int, Job]],
    running: dict[Connection, _Running[Job]],
    work: Callable[[Job], object],
    limits: ParseLimits,
    parallel: int,
) -> None:
    while waiting and len(running) < max(1, parallel):
        index, job = waiting.popleft()
        receive, send = context.Pipe(duplex=False)
        process = context.Process(target=_child, args=(send, work, job, limits.memory_mb))
        process.start()
        send.close()
        running[receive] = _Running(index, job, process, receive, time.monotonic() + limits.seconds)


def _reap(
    running: dict[Connection, _Running[Job]], over_limit: Callable[[Job, str], Result], limits: ParseLimits
) -> list[tuple[int, Result]]:
    """The jobs that finish within a short wait (short, so that a Ctrl-C held back is soon heard)."""
    soonest = min(entry.deadline for entry in running.values())
    finished = []
    for ready in wait(list(running), timeout=min(_STEP_SECONDS, max(0.0, soonest - time.monotonic()))):
        entry = running.pop(ready)  # type: ignore[call-overload]  # wait() returns what it was given
        finished.append((entry.index, _collect(entry, over_limit, limits)))
    now = time.monotonic()
    for connection, entry in list(running.items()):
        if entry.deadline <= now:
            del running[connection]
            _end(entry)
            why = f"took longer than the parse time limit ({limits.seconds:g} s, --parse-timeout)"
            finished.append((entry.index, over_limit(entry.job, why)))
    return finished


def _collect(entry: _Running[Job], over_limit: Callable[[Job, str], Result], limits: ParseLimits) -> Result:
    try:
        result = entry.results.recv()
    except EOFError:  # the process ended without an answer: over its memory, or a crash in C code
        entry.process.join()
        code = entry.process.exitcode
        if code in (OVER_MEMORY, -signal.SIGKILL):  # SIGKILL from outside: the kernel's out-of-memory killer
            memory = f"({limits.memory_mb} MB, --parse-memory)"
            return over_limit(entry.job, f"needed more than the parse memory limit {memory}")
        return over_limit(entry.job, f"ended its parser process without a result (exit status {code})")
    finally:
        entry.results.close()
    entry.process.join()
    return result


def out_of_memory(error: BaseException) -> bool:
    """Whether `error` is, or was raised while handling, an allocation that failed: a MemoryError from
    Python, or MuPDF's own report of one (which pymupdf raises as a RuntimeError, or as a SystemError
    around a MemoryError). Such an error means the paper is over its memory limit, not damaged."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, MemoryError) or _MUPDF_NO_MEMORY.search(str(current)):
            return True
        current = current.__cause__ or current.__context__
    return False


def _end(entry: _Running) -> None:
    entry.process.kill()
    entry.process.join()
    entry.results.close()


def parse_processes() -> multiprocessing.context.ForkServerContext:
    """Papers are parsed in processes forked from a fork server: a fresh interpreter that has imported
    the parser and nothing else. A child forked from the build itself would inherit the build's heap,
    whose freed pages it could fill without growing its address space, so no memory limit would hold;
    a child of the small fork server starts with little, and the limit is what parsing may add."""
    context = multiprocessing.get_context("forkserver")
    package = __name__.rsplit(".", 1)[0]  # builder.stages.parse
    context.set_forkserver_preload([package, f"{package}.fork_server"])
    return context


def _child(send: Connection, work: Callable, job: object, memory_mb: int) -> None:
    die_with_parent(os.getppid())  # the fork server, which ends with the build
    _limit_memory(memory_mb)
    try:
        result = work(job)
    except Exception as error:  # an allocation over the limit, in MuPDF or in Python: no room to report it
        if out_of_memory(error):
            os._exit(OVER_MEMORY)
        raise
    send.send(result)
    send.close()


def _limit_memory(memory_mb: int) -> None:
    """Cap this process's address space at what it holds now plus `memory_mb`: what the fork server
    holds (the interpreter and the parser) is already counted, so the limit is what parsing may add."""
    try:
        with open("/proc/self/statm") as statm:
            held = int(statm.read().split()[0]) * resource.getpagesize()
    except OSError:  # no /proc: not Linux, where RLIMIT_AS is not enforced anyway
        return
    limit = held + memory_mb * 1024 * 1024
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    resource.setrlimit(
        resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard)
    )
