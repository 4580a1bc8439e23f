"""The search page's ES modules as the build ships them, run under Node by a test's own script."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from builder.site.runtime import copy_page_modules
from support.pyodide import find_node


def node_script(folder: Path, name: str, source: str) -> Callable[[Any], Any]:
    """`run(argument)`: `source` run by Node beside the shipped page modules (copied into `folder`),
    with `argument` as JSON in argv[2]; it returns what the script printed, read as JSON."""
    if find_node() is None:
        pytest.skip("node is not on PATH")
    modules, _ = copy_page_modules(folder)
    (folder / modules / name).write_text(source, encoding="utf-8")

    def run(argument: Any) -> Any:
        finished = subprocess.run(
            [find_node(), name, json.dumps(argument)],
            cwd=folder / modules,
            capture_output=True,
            text=True,
            check=True,
        )
        return json.loads(finished.stdout)

    return run
