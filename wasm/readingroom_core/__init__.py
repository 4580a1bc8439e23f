"""Reading Room search core: stdlib-only, so CPython (CLI, tests, eval) and Pyodide (the site) run
the very same retrieval code."""

__version__ = "0.1.0"
