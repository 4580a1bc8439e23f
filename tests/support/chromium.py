"""How this project starts Debian's chromium for its browser tests and benchmarks, and what they ask the page.

The background-networking flags matter: without them chromium calls Google's hosts at start-up,
which these machines refuse (and which the no-foreign-requests test would rightly flag).
"""

import json
import time
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")  # Debian's package; never `playwright install`
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# For page.evaluate(TOP_CHUNK_IDS, [queries, k]): each query's ranked chunk ids from window.readingRoom.
TOP_CHUNK_IDS = """async ([queries, k]) => {
  const tops = [];
  for (const query of queries) tops.push((await window.readingRoom.search(query, {k})).map((hit) => hit.chunk_id));
  return tops;
}"""


POLL_SECONDS = 0.05


def wait_for(page, script: str, timeout_ms: float = 90_000):
    """page.wait_for_function for pages under the site's Content-Security-Policy: Playwright's poller
    evaluates a string in the page, which the policy (no 'unsafe-eval') refuses, while page.evaluate
    runs through the DevTools protocol, which it does not govern. Returns the first truthy value."""
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        value = page.evaluate(script)
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout_ms / 1000:.0f} s for {script}")
        time.sleep(POLL_SECONDS)


SEARCH_WORKER = "worker.js"


class WorkerHeaps:
    """The page's workers seen through the DevTools protocol (auto-attached, non-flat sessions)."""

    def __init__(self, context, page):
        self.devtools = context.new_cdp_session(page)
        self.workers: dict[str, str] = {}  # session id -> url
        self.replies: dict[int, dict] = {}
        self.next_id = 0
        self.devtools.on("Target.attachedToTarget", self._attached)
        self.devtools.on("Target.receivedMessageFromTarget", self._message)
        self.devtools.send(
            "Target.setAutoAttach", {"autoAttach": True, "waitForDebuggerOnStart": False, "flatten": False}
        )

    def _attached(self, event):
        if event["targetInfo"]["type"] == "worker":
            self.workers[event["sessionId"]] = event["targetInfo"]["url"]

    def _message(self, event):
        message = json.loads(event["message"])
        if "id" in message:
            self.replies[message["id"]] = message

    def call(self, page, session: str, method: str, params: dict | None = None) -> dict:
        self.next_id += 1
        command = {"id": self.next_id, "method": method, "params": params or {}}
        self.devtools.send(
            "Target.sendMessageToTarget", {"sessionId": session, "message": json.dumps(command)}
        )
        deadline = time.monotonic() + 30
        while self.next_id not in self.replies:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{method} in worker {self.workers[session]} got no reply")
            page.wait_for_timeout(20)
        reply = self.replies.pop(self.next_id)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def measure(self, page) -> dict:
        """Per worker (by script name): V8's used heap and its ArrayBuffers' backing stores, in bytes, and
        for the search worker, once it has searched, Python's WebAssembly memory (in the total)."""
        heaps = {}
        python_memory = page.evaluate("window.readingRoom.status().last_search?.python_memory_bytes ?? 0")
        for session, url in list(self.workers.items()):
            self.call(
                page, session, "HeapProfiler.collectGarbage"
            )  # what is kept, not what awaits collection
            usage = self.call(page, session, "Runtime.getHeapUsage")
            used, buffers = int(usage["usedSize"]), int(usage["backingStorageSize"])
            name = url.rsplit("/", 1)[-1].split("?")[0]
            heaps[name] = {"js_heap_used": used, "array_buffers": buffers, "total": used + buffers}
            if name == SEARCH_WORKER and python_memory:
                heaps[name] |= {"python_wasm_memory": python_memory, "total": used + buffers + python_memory}
        return heaps
