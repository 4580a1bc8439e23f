"""The writers of the site's file families, one module per family, named as its format
(`readingroom_core/formats/<family>.py`) and its reader (`readingroom_core/readers/<family>.py`) are.

A writer turns what the build holds into a file's bytes; `builder/site/` names the files and puts them on
disk. Only the build writes: the browser's core holds no writer, even of a file it could write in stdlib.
"""
