"""A remote SPARQL 1.1 endpoint (Wikidata's query service, QLever, Oxigraph, Fuseki) via
SPARQLWrapper, with the manners Wikidata asks for: a descriptive User-Agent, time-outs,
polite retries of 429/5xx that honour Retry-After, and a disk cache so a rerun sends nothing.
"""

from __future__ import annotations

import email.utils
import json
import logging
import os
import random
import socket
import time
import urllib.error
from dataclasses import dataclass

from .. import __version__
from ..cache import Cache, get_cache, make_key
from .base import Row, SparqlSource

log = logging.getLogger(__name__)

WIKIDATA_ENDPOINT = "https://query.wikidata.org/sparql"
RETRYABLE = {429, 500, 502, 503, 504}


def user_agent() -> str:
    """Wikidata's policy wants a tool name, version and a way to reach its operator:
    set KALMA_CONTACT (an e-mail or URL) or override the whole string with KALMA_USER_AGENT."""
    if os.environ.get("KALMA_USER_AGENT"):
        return os.environ["KALMA_USER_AGENT"]
    contact = os.environ.get("KALMA_CONTACT", "set KALMA_CONTACT")
    return f"kalma-bench/{__version__} ({contact}) SPARQLWrapper"


class EndpointError(RuntimeError):
    """The endpoint kept failing after the retry budget, or answered something unusable."""


@dataclass
class RetryPolicy:
    attempts: int = 5
    timeout: float = 60.0  # seconds per request
    backoff: float = 1.0  # first wait; doubles each retry, with jitter
    max_wait: float = 120.0


def _http_error(exc: BaseException) -> urllib.error.HTTPError | None:
    """SPARQLWrapper turns some HTTP errors into its own exceptions; find the original."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, urllib.error.HTTPError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as seconds: either a number of seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time()) if when else None


class EndpointSource(SparqlSource):
    name = "sparql"

    def __init__(
        self,
        url: str = WIKIDATA_ENDPOINT,
        lang: str = "en",
        policy: RetryPolicy | None = None,
        cache: Cache | None = None,
        batch_size: int = 50,
    ):
        super().__init__(lang)
        self.url = url
        self.policy = policy or RetryPolicy()
        self.cache = cache
        self.batch_size = batch_size
        self.requests_sent = 0  # HTTP requests, retries included (round_trips counts queries)

    def _cache(self) -> Cache:
        return self.cache or get_cache()

    def _select(self, query: str) -> list[Row]:
        body = self._cached("select", query, "json")
        try:
            data = json.loads(body)
            return [dict(b) for b in data["results"]["bindings"]]
        except (ValueError, KeyError) as exc:  # validated before caching; defensive
            raise EndpointError(f"{self.url}: unreadable SELECT result") from exc

    def _construct(self, query: str) -> str:
        return self._cached("construct", query, "nt")

    def _cached(self, kind: str, query: str, fmt: str) -> str:
        key = make_key("kg", "sparql", self.url, {"kind": kind, "format": fmt}, query)
        return self._cache().cached(key, "kg", lambda: self._request(query, fmt))

    def _request(self, query: str, fmt: str) -> str:
        from SPARQLWrapper import JSON, POST, SPARQLWrapper

        last: str = ""
        for attempt in range(1, self.policy.attempts + 1):
            client = SPARQLWrapper(self.url, agent=user_agent())
            client.setTimeout(int(max(1, self.policy.timeout)))
            client.setMethod(POST)  # long VALUES blocks exceed URL limits
            client.setQuery(query)
            if fmt == "json":
                client.setReturnFormat(JSON)
            else:
                client.addCustomHttpHeader("Accept", "application/n-triples")
            wait: float | None = None
            try:
                self.requests_sent += 1
                raw = client.query().response.read().decode("utf-8")
                if fmt == "json":
                    # Wikidata's manual warns that a query that timed out may still send 200 with a
                    # truncated or empty body: such a body is retried, never cached.
                    data = json.loads(raw)
                    if "results" not in data or "bindings" not in data["results"]:
                        raise ValueError("no results.bindings")
                elif raw.strip() and not raw.rstrip().endswith("."):
                    raise ValueError("truncated N-Triples")
                return raw
            except ValueError as exc:
                last = f"suspicious 200 answer ({exc})"
            except (socket.timeout, TimeoutError) as exc:
                last = f"timed out after {self.policy.timeout}s ({exc})"
            except Exception as exc:  # noqa: BLE001 - classified below
                http = _http_error(exc)
                if http is not None and http.code in RETRYABLE:
                    last = f"HTTP {http.code}"
                    wait = retry_after_seconds(http.headers.get("Retry-After") if http.headers else None)
                elif isinstance(exc, urllib.error.URLError) and isinstance(exc.reason, (socket.timeout, TimeoutError)):
                    last = f"timed out after {self.policy.timeout}s"
                elif http is not None:
                    raise EndpointError(f"{self.url}: HTTP {http.code}: {exc}") from exc
                else:
                    raise EndpointError(f"{self.url}: {type(exc).__name__}: {exc}") from exc
            if attempt == self.policy.attempts:
                break
            if wait is None:
                wait = self.policy.backoff * 2 ** (attempt - 1) * (1 + random.random() / 4)
            wait = min(wait, self.policy.max_wait)
            log.warning("%s: %s; retry %d/%d in %.1fs", self.url, last, attempt, self.policy.attempts - 1, wait)
            time.sleep(wait)
        raise EndpointError(f"{self.url}: gave up after {self.policy.attempts} attempts: {last}")
