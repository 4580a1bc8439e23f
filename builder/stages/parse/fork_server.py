"""Imported into the fork server that parse processes are forked from (its preload), never into the build.

A Ctrl-C reaches the whole process group, parse processes too, though the build ends them itself. One
that landed in a new process before it had set itself to ignore SIGINT printed a traceback under the
build's one line. The fork server keeps the SIGINT setting it finds after its preload for every process
it forks: here it is made ignored.
"""

import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)
