"""The measured figures: benchmark records (docs/measurements/*.json) and the page made from them.

Every bench script takes `--record`, which writes its results to docs/measurements/<bench>.json with the
date, the commit, the machine and the command that produced them; `nox -s bench` records them all and
then renders docs/measurements.md, the one place the project's measured numbers are written down:

    python scripts/measurements.py render    # rewrite docs/measurements.md from the records
    python scripts/measurements.py check     # exit 1 when docs/measurements.md is not what render writes

The page is generated, never edited by hand; tests/repository/test_measurements.py holds it to its records.
Results render generically: every dict of plain values is one table row, labelled by its path, and rows
with the same columns share a table, so a bench needs no rendering code of its own.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
RECORDS = REPO_ROOT / "docs" / "measurements"
DOCUMENT = REPO_ROOT / "docs" / "measurements.md"

# Every bench that records, in the page's order: its section title and what it measures.
BENCHES = {
    "parse": (
        "Parse and chunk",
        "scripts/bench_parse.py: the mirror parsed and chunked, pages/s, and checks of the text and chunks.",
    ),
    "build": ("Whole-mirror build", "scripts/bench_build.py: build times, embed throughput, artifact bytes."),
    "embed": (
        "Document embedding",
        "scripts/bench_embed.py: chunks/s of embedding settings and their vectors' cosine to the builder's.",
    ),
    "eval": ("Retrieval quality", "scripts/bench_eval.py: `python -m builder eval` over every question set."),
    "core": ("Search core latency", "scripts/bench_core.py: the core alone, in CPython and in Pyodide."),
    "encoder": (
        "Query encoder",
        "scripts/bench_encoder.py: the shipped encoder's bytes and fidelity to fp32.",
    ),
    "browser": (
        "In the browser",
        "scripts/bench_browser.py: the built site in chromium, start-up to results.",
    ),
    "navigation": (
        "Navigational queries",
        "scripts/bench_navigation.py: a query naming a paper (id, title, author and year, short name) puts it first.",
    ),
    "suggest": ("Did you mean", "scripts/bench_suggest.py: the cost of spelling suggestions per query."),
    "graph": (
        "Citation graph and map",
        "scripts/bench_graph.py: matching against the hand-checked sample, the graph, suggest, map projections.",
    ),
    "weak": (
        "Low-match note",
        "scripts/calibrate_weak_match.py: answerable questions called weak (false alarms) and weak queries caught.",
    ),
    "beir": ("BEIR", "scripts/bench_beir.py: BEIR datasets through the site's pipeline and engine."),
    "stemmer": (
        "Stemmer",
        "scripts/bench_stemmer.py: the core's Porter2 stemmer against snowballstemmer on the mirror's and "
        "BEIR's vocabularies, and the words/s of each.",
    ),
    "ray": ("Builds on Ray", "scripts/bench_ray.py: a cold-embed build, local and on a local Ray instance."),
    "gpu": (
        "Builds on a GPU machine",
        "scripts/bench_gpu.py: the GPU engine's chunks/s and cosine to the CPU engine's, and the parse and "
        "embed stages of local and Ray builds on a lent GPU machine, with a projection for 10,000 papers.",
    ),
    "scale": (
        "Lists of 1,000 and 10,000 papers",
        "scripts/bench_scale.py: synthetic lists (the mirror's text recombined, perturbed real vectors) "
        "built and measured in chromium and the search core.",
    ),
    "ask-sources": (
        "Ask's sources",
        "scripts/bench_ask_sources.py: answerable questions whose sources hold a gold page, and multi-paper "
        "questions whose sources hold every gold paper, at prompt budgets of 4,500, 16,000 and 64,000 tokens.",
    ),
    "local_llm": (
        "A real llama.cpp server",
        "scripts/bench_local_llm.py: Ask through the CLI and the site against llama-cpp-python on loopback.",
    ),
}

Scalar = str | int | float | bool | None
Record = dict[str, Any]  # one docs/measurements/*.json file, as JSON reads it


@dataclass(frozen=True)
class BenchRun:
    """One bench run: what is known before it starts, saved with its results at the end."""

    bench: str
    command: str
    date: str
    commit: str | None
    machine: dict[str, Scalar]

    def save(self, results: object, folder: Path | None = None) -> Path:
        folder = RECORDS if folder is None else folder  # read here, so a test can point it elsewhere
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.bench}.json"
        record = {**asdict(self), "results": results}
        path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(
            f"recorded {path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path}",
            file=sys.stderr,
        )
        return path


def add_record_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--record",
        action="store_true",
        help="also write the results to docs/measurements/ (then `python scripts/measurements.py render`)",
    )


def begin(bench: str, argv: list[str] | None = None) -> BenchRun:
    """Facts about this run, taken as it starts (the load average is the machine's before the bench).

    `argv`: the script's arguments when its main() was given them, else sys.argv's.
    """
    if bench not in BENCHES:
        raise ValueError(f"unknown bench {bench!r}; add it to BENCHES in scripts/measurements.py")
    return BenchRun(
        bench=bench,
        command=command_line([sys.argv[0], *(sys.argv[1:] if argv is None else argv)]),
        date=datetime.date.today().isoformat(),
        commit=current_commit(),
        machine={
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "system": f"{platform.system()} {platform.machine()}",
            "load_1min_at_start": round(os.getloadavg()[0], 1),
        },
    )


def command_line(argv: list[str]) -> str:
    """The command as a reader would type it in the repository: paths beside it made relative."""
    script = Path(argv[0])
    words = ["python", os.path.relpath(script.resolve(), REPO_ROOT) if script.suffix == ".py" else argv[0]]
    for word in argv[1:]:
        path = Path(os.path.normpath(word))  # not resolved: ../shared may be a link to elsewhere
        if path.is_absolute() and path.is_relative_to(REPO_ROOT.parent):
            word = os.path.relpath(path, REPO_ROOT)
        words.append(word)
    return shlex.join(words)


def current_commit() -> str | None:
    done = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "describe", "--always", "--dirty", "--abbrev=12"],
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() if done.returncode == 0 else None


def load_records(folder: Path = RECORDS) -> list[Record]:
    records = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))]
    unknown = [record["bench"] for record in records if record["bench"] not in BENCHES]
    if unknown:
        raise ValueError(f"records of unknown benches {unknown}; add them to BENCHES")
    return sorted(records, key=lambda record: list(BENCHES).index(record["bench"]))


def render(records: list[Record]) -> str:
    lines = [
        "# Measurements",
        "",
        "<!-- Generated by `python scripts/measurements.py render` from docs/measurements/*.json; do not edit. -->",
        "",
        "Every measured figure of the project, as its bench script last recorded it (`--record`;",
        "`nox -s bench` runs them all). Each section names the command, the commit it measured and the",
        "machine: timings from a shared 2-core machine and from a quiet one are not comparable.",
    ]
    if not records:
        lines += ["", "Nothing is recorded yet."]
    for record in records:
        lines += ["", *render_record(record)]
    return "\n".join(lines) + "\n"


def render_record(record: Record) -> list[str]:
    title, what = BENCHES[record["bench"]]
    machine = record["machine"]
    lines = [
        f"## {title}",
        "",
        what,
        "",
        f"    {record['command']}",
        "",
        f"Recorded {record['date']} at commit `{record['commit']}` on {machine['cores']} cores "
        f"({machine['system']}, Python {machine['python']}, load {machine['load_1min_at_start']} at start).",
    ]
    for columns, rows in tables(record["results"]):
        lines += ["", f"| | {' | '.join(columns)} |", "|---" * (len(columns) + 1) + "|"]
        for label, row in rows:
            lines.append(f"| {label} | {' | '.join(cell(row.get(column)) for column in columns)} |")
    return lines


def tables(results: object) -> list[tuple[list[str], list[tuple[str, dict[str, Scalar]]]]]:
    """Rows with the same columns form one table, in the order each kind of row first appears."""
    grouped: dict[tuple[str, ...], list[tuple[str, dict[str, Scalar]]]] = {}
    for path, row in rows_of(results, []):
        grouped.setdefault(tuple(row), []).append((" · ".join(path) or "all", row))
    return [(list(columns), rows) for columns, rows in grouped.items()]


def rows_of(value: object, path: list[str]) -> list[tuple[list[str], dict[str, Scalar]]]:
    """(path, plain values) for every dict in `value`; list items are labelled by their text fields."""
    if isinstance(value, list) and not all(is_plain(item) for item in value):
        found = []
        for number, item in enumerate(value, start=1):
            label = item_label(item) if isinstance(item, dict) else ""
            found += rows_of(strip_label(item), [*path, label or str(number)])
        return found
    if not isinstance(value, dict):
        return [(path, {"value": plain(value)})]
    row = {str(key): plain(item) for key, item in value.items() if is_plain(item)}
    found = [(path, row)] if row else []
    for key, item in value.items():
        if not is_plain(item):
            found += rows_of(item, [*path, str(key)])
    return found


def item_label(item: dict[str, object]) -> str:
    return " ".join(value for value in item.values() if isinstance(value, str))


def strip_label(item: object) -> object:
    return {k: v for k, v in item.items() if not isinstance(v, str)} if isinstance(item, dict) else item


def is_plain(value: object) -> bool:
    return not isinstance(value, (dict, list)) or (
        isinstance(value, list) and all(not isinstance(item, (dict, list)) for item in value)
    )


def plain(value: object) -> Scalar:
    """A table cell's value: a list of plain values reads as one text."""
    if isinstance(value, list):
        return ", ".join(cell(item) for item in value)
    return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)


def cell(value: Scalar) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        shown = f"{value:,.4f}".rstrip("0").rstrip(".")
        if value != round(value) and shown.lstrip("-").replace(",", "") in ("0", str(abs(round(value)))):
            shown = f"{value:,.6f}".rstrip("0").rstrip(".")  # a cosine of 0.999998 must not read 1
        return shown
    return str(value).replace("|", "\\|")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("action", choices=("render", "check"))
    args = parser.parse_args(argv)
    text = render(load_records())
    if args.action == "render":
        DOCUMENT.write_text(text, encoding="utf-8")
        print(f"wrote {DOCUMENT.relative_to(REPO_ROOT)}")
        return 0
    current = DOCUMENT.read_text(encoding="utf-8") if DOCUMENT.exists() else ""
    if current != text:
        print(
            f"{DOCUMENT.relative_to(REPO_ROOT)} is stale: python scripts/measurements.py render",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
