"""Should this run of the publishing workflow build? Prints `build=true|false` for $GITHUB_OUTPUT.

The workflow's weekly schedule is always on (a fork edits one file, never the workflow); this step
turns it into a build only when the corpus file says `[publish] weekly = true`. Every other event
(push, pull request, manual run) builds. Standard library only: it runs before anything is installed.

    python3 scripts/publish_schedule.py [--corpus FILE] [--event NAME]   (default: $GITHUB_EVENT_NAME)
"""

from __future__ import annotations

import argparse
import os
import sys
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from builder.models import Publish  # noqa: E402  (dataclasses only: nothing to install)


def wants_build(corpus_text: str, event: str) -> bool:
    if event != "schedule":
        return True
    return Publish(**tomllib.loads(corpus_text).get("publish", {})).weekly is True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", type=Path, default=Path("corpus/readingroom.toml"))
    parser.add_argument("--event", default=os.environ.get("GITHUB_EVENT_NAME", ""))
    args = parser.parse_args(argv)
    build = wants_build(args.corpus.read_text(encoding="utf-8"), args.event)
    line = f"build={'true' if build else 'false'}"
    print(line)
    output = os.environ.get("GITHUB_OUTPUT")
    if output:
        with open(output, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
    if not build:
        print("weekly rebuilds are off: set [publish] weekly = true in the corpus file to turn them on")
    return 0


if __name__ == "__main__":
    sys.exit(main())
