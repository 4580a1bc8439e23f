"""The browser runtime against its protocol: `tsc --checkJs` over the page's and the workers' modules.

wasm/runtime/protocol.js types every message between the page, the search worker and the encoder worker,
the Python boundary and window.readingRoom; the checks below hold the senders and receivers to it, and
show that a message off the protocol is caught. Needs node and `npm ci --prefix wasm`; skipped without.
"""

import json
import subprocess

import pytest
from support.pyodide import find_node

from builder.site.runtime import WASM_DIR

TSC = WASM_DIR / "node_modules" / "typescript" / "bin" / "tsc"
PROJECTS = ("tsconfig.page.json", "tsconfig.workers.json")


@pytest.fixture(scope="module")
def tsc():
    if find_node() is None:
        pytest.skip("node is not on PATH")
    if not TSC.is_file():
        pytest.skip(f"{TSC} is missing; run `npm ci --prefix wasm`")

    def run(project) -> subprocess.CompletedProcess:
        return subprocess.run(
            [find_node(), str(TSC), "-p", str(project)], capture_output=True, text=True, check=False
        )

    return run


@pytest.mark.parametrize("project", PROJECTS)
def test_page_and_workers_keep_to_the_protocol(tsc, project):
    checked = tsc(WASM_DIR / project)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_message_off_the_protocol_is_caught(tsc, tmp_path):
    protocol = (WASM_DIR / "runtime" / "protocol.js").as_posix()
    (tmp_path / "off.js").write_text(
        f'/** @type {{import("{protocol}").FromSearchWorker}} */\n'
        'export const ready = { type: "ready", which: "semantic" }; // no checksums_ms, row_products\n',
        encoding="utf-8",
    )
    config = {
        "extends": (WASM_DIR / "tsconfig.base.json").as_posix(),
        "compilerOptions": {"lib": ["ES2024", "WebWorker"]},
        "files": ["off.js"],
    }
    (tmp_path / "tsconfig.json").write_text(json.dumps(config), encoding="utf-8")
    checked = tsc(tmp_path / "tsconfig.json")
    assert checked.returncode != 0 and "checksums_ms" in checked.stdout
