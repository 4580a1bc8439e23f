"""`add`, `remove`, `list` and `import-bibtex`: the reading list in the corpus file, edited with the
researcher's comments kept (builder/config.py)."""

from __future__ import annotations

import argparse
import json
import sys

from builder import config
from builder.commands.bibtex import arxiv_id_of, parse_bibtex
from builder.models import PaperRef


def _refs(ids: list[str], tags: list[str], note: str = "") -> list[PaperRef]:
    config.check_tags(tags, "--tag")  # named as typed, before the corpus file would refuse them
    config.check_text(note, "--note", config.MAX_NOTE, lines=True)
    refs = []
    for raw in ids:
        arxiv_id, version = config.split_arxiv_id(raw)
        refs.append(PaperRef(arxiv_id, version, tuple(tags), note))
    return refs


def cmd_add(args: argparse.Namespace) -> int:
    added = config.add_papers(args.corpus, _refs(args.ids, args.tag, args.note))
    listed = sorted(set(config.split_arxiv_id(i)[0] for i in args.ids) - {r.arxiv_id for r in added})
    for ref in added:
        print(f"added {ref.arxiv_id}{ref.version or ''}")
    for arxiv_id in listed:
        print(f"already listed: {arxiv_id}")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    removed = config.remove_papers(args.corpus, args.ids)
    for arxiv_id in removed:
        print(f"removed {arxiv_id}")
    missing = sorted(set(config.split_arxiv_id(i)[0] for i in args.ids) - set(removed))
    for arxiv_id in missing:
        print(f"not on the reading list: {arxiv_id}", file=sys.stderr)
    return 1 if missing else 0


def shown(text: str) -> str:
    """A line as the terminal should print it: a note's tabs and line breaks (the only control
    characters the corpus file lets through) escaped, so one paper stays one line."""
    return config.ONE_LINE_UNSAFE.sub(lambda found: ascii(found[0])[1:-1], text)


def cmd_list(args: argparse.Namespace) -> int:
    corpus = config.load_corpus(args.corpus)
    if args.json:
        rows = [
            {"id": r.arxiv_id, "version": r.version, "tags": list(r.tags), "note": r.note}
            for r in corpus.papers
        ]
        print(json.dumps(rows, indent=1))
        return 0
    for ref in corpus.papers:
        tags = f"  [{', '.join(ref.tags)}]" if ref.tags else ""
        note = f"  {ref.note}" if ref.note else ""
        print(shown(f"{ref.arxiv_id}{ref.version or ''}{tags}{note}"))
    print(f"{len(corpus.papers)} papers", file=sys.stderr)
    return 0


def cmd_import_bibtex(args: argparse.Namespace) -> int:
    if not args.file.exists():
        raise config.CorpusError(f"{args.file}: no such BibTeX file")
    if args.file.is_dir():
        raise config.CorpusError(f"{args.file} is a folder, not a BibTeX file; pass the .bib file")
    entries = parse_bibtex(args.file.read_text(encoding="utf-8", errors="replace"))
    ids, skipped = [], []
    for entry in entries:
        try:
            hit = arxiv_id_of(entry)
        except config.CorpusError as exc:  # one implausible id skips its entry, not the whole file
            skipped.append(f"{exc}")
            continue
        if hit:
            ids.append(hit[0] + (hit[1] or ""))
        else:
            skipped.append(f"{entry.key}: no arXiv eprint")
    added = config.add_papers(args.corpus, _refs(ids, args.tag)) if ids else []
    print(f"{len(entries)} entries, {len(ids)} with an arXiv id, {len(added)} added to {args.corpus}")
    for why in skipped:
        print(f"  skipped {why}", file=sys.stderr)
    return 0
