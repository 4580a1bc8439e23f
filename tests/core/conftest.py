"""The core layer: the search core (`readingroom_core`) alone, as the browser runs it. Collected and run
with nothing installed but pytest and the core (`nox -s core`), so nothing here, in these tests or in
the support modules they use imports the builder or a package outside the standard library."""

from pathlib import Path

import readingroom_core


def pytest_report_header() -> str:
    """Which core is under test: an editable install elsewhere would otherwise shadow this tree's."""
    return f"readingroom_core: {Path(readingroom_core.__file__).parent}"
