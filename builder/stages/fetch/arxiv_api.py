"""The arXiv metadata client: batched `id_list` queries through the `arxiv` package, sent over the
run's paced session (`download.Network`), with our retries instead of the client's."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import arxiv
import requests

from builder.models import PaperMeta
from builder.stages.fetch.download import Fatal, GaveUp, Network, TryAgain, parse_retry_after, short_error
from builder.stages.fetch.sources import clean, clean_title

_SHORT_ID = re.compile(r"^(?P<id>.+?)(?P<version>v\d+)$")

QueryErrors = dict[str, tuple[str, str]]  # query id -> (reason, hint)


def _iso_date(value: datetime | None) -> str:
    if value is None or value.year <= 1:  # arxiv.Result's "unknown" default is datetime.min
        return ""
    return value.date().isoformat()


def meta_from_result(result: arxiv.Result) -> PaperMeta:
    """Map an `arxiv.Result` to `PaperMeta`; the version comes from its entry_id."""
    short = result.get_short_id()  # "2005.11401v4" or "hep-th/9901001v1"
    match = _SHORT_ID.match(short)
    arxiv_id, version = (match["id"], match["version"]) if match else (short, "")
    comment = clean(result.comment or "")
    return PaperMeta(
        arxiv_id=arxiv_id,
        version=version,
        title=clean_title(result.title, arxiv_id),
        authors=[clean(a.name) for a in result.authors],
        abstract=clean(result.summary),
        categories=list(result.categories),
        primary_category=result.primary_category or "",
        published=_iso_date(result.published),
        updated=_iso_date(result.updated),
        withdrawn="withdrawn" in comment.lower(),
        comment=comment,
        doi=(result.doi or "").strip(),
        journal_ref=clean(result.journal_ref or ""),
    )


class _ArxivClient(arxiv.Client):
    """`arxiv.Client` pointed at `api_url` and sending through our paced session."""

    def __init__(self, session: requests.Session, api_url: str, page_size: int, delay_seconds: float):
        # num_retries=0: retries happen in Network.retrying, which backs off exponentially and honours
        # Retry-After; the client's own retries do neither, and stacked they would multiply the tries.
        super().__init__(page_size=page_size, delay_seconds=delay_seconds, num_retries=0)
        self.query_url_format = api_url
        self._session = session  # arxiv 4.0.2 sends every API request through this attribute


class ArxivApi:
    """Metadata (and PDF links) for lists of versioned or bare ids."""

    def __init__(self, network: Network, api_url: str, batch_size: int, corpus_file: Path):
        self.network = network
        self.api_url = api_url
        self.batch_size = batch_size
        self.corpus_file = corpus_file
        self._client: _ArxivClient | None = None

    def _client_for_session(self) -> _ArxivClient:
        if self._client is None:
            self._client = _ArxivClient(
                self.network.session,
                self.api_url,
                page_size=max(1, self.batch_size),
                delay_seconds=self.network.delay_seconds,
            )
        return self._client

    def _query_once(self, query_ids: list[str]) -> list[arxiv.Result]:
        client = self._client_for_session()
        session = self.network.session
        search = arxiv.Search(id_list=query_ids, max_results=len(query_ids))
        try:
            results = list(client.results(search))
        except arxiv.HTTPError as err:
            if err.status == 429 or err.status >= 500:
                response = session.last_response
                retry_after = parse_retry_after(
                    response.headers.get("Retry-After") if response is not None else None
                )
                raise TryAgain(f"the arXiv API answered HTTP {err.status}", retry_after) from err
            raise Fatal(f"the arXiv API answered HTTP {err.status}", err.status) from err
        except arxiv.UnexpectedEmptyPageError as err:
            raise TryAgain("the arXiv API returned an unexpectedly empty page") from err
        except requests.exceptions.RequestException as err:
            raise TryAgain(f"could not reach the arXiv API ({short_error(err)})", connection=True) from err
        response = session.last_response
        if not results and response is not None and b"<feed" not in response.content[:4096]:
            # The client reads an unparseable page as "no results"; that must not become "not found".
            raise TryAgain("the arXiv API answered with something that is not an Atom feed")
        return results

    def query(self, query_ids: list[str]) -> tuple[list[arxiv.Result], QueryErrors]:
        """Results for `query_ids`, and (reason, hint) for each query id that could not be asked."""
        retry_hint = (
            "check the network and run again later (finished papers stay cached), or pass --mirror DIR"
        )
        if self.network.down:
            return [], {q: (self.network.down, retry_hint) for q in query_ids}
        try:
            what = f"arXiv API query for {len(query_ids)} id(s)"
            return self.network.retrying(what, lambda: self._query_once(query_ids)), {}
        except Fatal as err:
            if len(query_ids) > 1:  # one bad id must not sink its whole batch: ask one by one
                results: list[arxiv.Result] = []
                errors: QueryErrors = {}
                for one in query_ids:
                    got, bad = self.query([one])
                    results += got
                    errors.update(bad)
                return results, errors
            return [], {
                query_ids[0]: (
                    f"{err.message}, which rejects the query",
                    f"check the id in {self.corpus_file}",
                )
            }
        except GaveUp as err:
            self.network.gave_up(err)
            return [], {q: (err.message, retry_hint) for q in query_ids}
