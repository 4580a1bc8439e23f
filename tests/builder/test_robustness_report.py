"""What a site publishes about its build: no absolute paths of the build machine, and hints that never
ask a researcher to delete a file from their own mirror."""

import json
import shutil

from support.builds import SMALL_PAPERS, run_build, write_corpus
from support.pdfgen import write_not_a_pdf, write_truncated


def test_the_report_and_corpus_page_name_folders_by_role(tmp_path, built_sites, generated_mirror, capsys):
    mirror = tmp_path / "my mirror"
    (mirror / "pdf").mkdir(parents=True)
    (mirror / "meta").mkdir()
    good = SMALL_PAPERS[0]
    shutil.copy(generated_mirror / "pdf" / f"{good}.pdf", mirror / "pdf")
    shutil.copy(generated_mirror / "meta" / f"{good}.json", mirror / "meta")
    broken = {"2501.00001": write_not_a_pdf, "2501.00002": write_truncated}
    for arxiv_id, write in broken.items():
        write(mirror / "pdf" / f"{arxiv_id}.pdf")
        meta = {"version": "v1", "title": "Broken", "authors": ["A. Author"]}
        (mirror / "meta" / f"{arxiv_id}.json").write_text(json.dumps(meta))
    corpus = write_corpus(tmp_path / "readingroom.toml", [good, *broken])

    assert run_build(corpus, tmp_path / "site", built_sites.cache, mirror) == 0
    printed = capsys.readouterr().out
    assert str(mirror) in printed  # the terminal keeps the full paths

    report = json.loads((tmp_path / "site" / "build-report.json").read_text())
    failures = {f["arxiv_id"]: f for f in report["failures"]}
    assert set(failures) == set(broken)
    for arxiv_id, failure in failures.items():
        assert failure["reason"].startswith(f"<mirror>/pdf/{arxiv_id}.pdf"), failure
        assert "delete" not in failure["hint"] and "into the mirror" in failure["hint"], failure
    for published in [tmp_path / "site" / "build-report.json", *(tmp_path / "site").rglob("*.html")]:
        text = published.read_text()
        assert str(tmp_path) not in text and "/root/" not in text, published
    page = (tmp_path / "site" / "corpus" / "index.html").read_text()
    assert "&lt;mirror&gt;/pdf/2501.00001.pdf" in page  # the corpus page's "Not indexed" list
