"""A remote SPARQL 1.1 endpoint (Wikidata's query service, QLever, Oxigraph, Fuseki) via
SPARQLWrapper, with the manners Wikidata asks for: a descriptive User-Agent, time-outs,
polite retries of 429/5xx that honour Retry-After, and a disk cache so a rerun sends nothing.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import logging
import os
import random
import socket
import time
import urllib.error
import urllib.parse
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from .. import __version__
from ..cache import Cache, get_cache, make_key
from ..errors import ConfigError, KalmaError
from .base import BadResult, Row, SparqlSource, check_rows

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


class EndpointError(KalmaError, RuntimeError):
    """The endpoint kept failing after the retry budget, or answered something unusable."""


@dataclass
class RetryPolicy:
    """How a remote endpoint is retried. Settable in code, by spec options, or from the
    environment: KALMA_SPARQL_ATTEMPTS, KALMA_SPARQL_TIMEOUT, KALMA_SPARQL_BACKOFF,
    KALMA_SPARQL_MAX_WAIT."""

    attempts: int = 5
    timeout: float = 60.0  # seconds per request
    backoff: float = 1.0  # first wait; doubles each retry, with jitter
    max_wait: float = 120.0

    def __post_init__(self) -> None:
        if self.attempts < 1 or not self.timeout > 0 or self.backoff < 0 or self.max_wait < 0:
            raise ConfigError(f"retry policy: attempts >= 1, timeout > 0, backoff and max_wait >= 0 (got {self})")

    @classmethod
    def from_env(cls) -> RetryPolicy:
        values: dict[str, float] = {}
        for field_name, cast in (("attempts", int), ("timeout", float), ("backoff", float), ("max_wait", float)):
            raw = os.environ.get(f"KALMA_SPARQL_{field_name.upper()}")
            if raw:
                try:
                    values[field_name] = cast(raw)
                except ValueError:
                    raise ConfigError(f"KALMA_SPARQL_{field_name.upper()}={raw!r}: not a number") from None
        return cls(**values)  # type: ignore[arg-type]


def _http_error(exc: BaseException) -> urllib.error.HTTPError | None:
    """SPARQLWrapper turns some HTTP errors into its own exceptions; find the original."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, urllib.error.HTTPError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as seconds: RFC 9110's delay-seconds (ASCII digits only) or an HTTP date;
    anything else (`1_0`, `+2`, `1e9`, `0.5`) is absent, never read as a number.
    The date may be in any of the three forms RFC 9110 says a recipient accepts.

    >>> [retry_after_seconds(v) for v in ("3", " 3 ", "soon", "nan", "1_0", "+2", "1e9", "0_3", "١", None)]
    [3.0, 3.0, None, None, None, None, None, None, None, None]
    >>> retry_after_seconds("Sun, 06 Nov 1994 08:49:37 GMT"), retry_after_seconds("Sunday, 06-Nov-94 08:49:37 GMT")
    (0.0, 0.0)
    """
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - time.time())


class EndpointSource(SparqlSource):
    name = "sparql"

    def __init__(
        self,
        url: str = WIKIDATA_ENDPOINT,
        lang: str = "en",
        policy: RetryPolicy | None = None,
        cache: Cache | None = None,
        batch_size: int = 50,
        fallback: str | None = None,
    ):
        super().__init__(lang, fallback)
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in {"http", "https"} or not parts.netloc:
            raise ConfigError(f"SPARQL endpoint {url!r} is not an http(s) URL")
        self.url = url
        self.policy = policy or RetryPolicy.from_env()
        self.cache = cache
        self.batch_size = batch_size
        self.requests_sent = 0  # HTTP requests, retries included (round_trips counts queries)

    def _cache(self) -> Cache:
        return self.cache or get_cache()

    def _select(self, query: str, required: Sequence[str] = (), allowed: Mapping[str, Collection[str]] | None = None) -> list[Row]:
        def rows(body: str) -> list[Row]:
            data = json.loads(body)
            if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
                raise BadResult("no results object")
            return check_rows(data["results"].get("bindings"), required, self.url, allowed)

        return rows(self._cached("select", query, "json", rows))

    def _construct(self, query: str) -> str:
        def ntriples(body: str) -> None:
            if body.strip() and not body.rstrip().endswith("."):
                raise BadResult("truncated N-Triples")

        return self._cached("construct", query, "nt", ntriples)

    def _cached(self, kind: str, query: str, fmt: str, check: Callable[[str], object]) -> str:
        """The endpoint's answer to `query`, from the cache when a usable one is there. An
        answer is checked (`check`) before it is cached and again when it is read back: a
        cached answer that fails is a miss, logged, and asked again."""
        cache = self._cache()
        key = make_key("kg", "sparql", self.url, {"kind": kind, "format": fmt}, query)
        hit = cache.get(key)
        if isinstance(hit, str):
            try:
                check(hit)
                cache.hits += 1
                return hit
            except ValueError as exc:
                log.warning("%s: cached answer unusable (%s); asking the endpoint again", self.url, exc)
        cache.misses += 1
        body = self._request(query, fmt, check)
        cache.put(key, "kg", body)
        return body

    def _request(self, query: str, fmt: str, check: Callable[[str], object]) -> str:
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
                # Wikidata's manual warns that a query that timed out may still send 200 with a
                # truncated or empty body: such a body is retried, never cached.
                check(raw)
                return raw
            except ValueError as exc:  # JSONDecodeError, BadResult, UnicodeDecodeError
                last = f"unusable 200 answer ({exc})"
            except Exception as exc:  # noqa: BLE001 - classified below
                http = _http_error(exc)
                if http is not None and http.code in RETRYABLE:
                    last = f"HTTP {http.code}"
                    wait = retry_after_seconds(http.headers.get("Retry-After") if http.headers else None)
                elif http is not None:
                    raise EndpointError(f"{self.url}: HTTP {http.code}: {str(exc).splitlines()[0] if str(exc) else ''}") from exc
                elif (transient := _transient(exc)) is not None:
                    last = transient
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


def _transient(exc: BaseException) -> str | None:
    """Why `exc` is worth retrying (a time-out, a refused, reset or dropped connection), or
    None. A name that does not resolve is not: it will not resolve on the next try either."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, socket.gaierror):
            return None
        if isinstance(seen, (socket.timeout, TimeoutError)):
            return "timed out"
        if isinstance(seen, (ConnectionError, http.client.HTTPException)):
            return f"connection failed ({type(seen).__name__})"
        reason = getattr(seen, "reason", None)
        seen = reason if isinstance(reason, BaseException) else (seen.__cause__ or seen.__context__)
    return None


def endpoint(
    url: str,
    *,
    attempts: int | None = None,
    timeout: float | None = None,
    backoff: float | None = None,
    max_wait: float | None = None,
    batch_size: int = 50,
    lang: str = "en",
    fallback: str | None = None,
) -> EndpointSource:
    """`sparql:URL[,attempts=N,timeout=S,backoff=S,max_wait=S,lang=fr,fallback=en]`; unset retry
    options come from the environment (KALMA_SPARQL_*), then the defaults."""
    base = RetryPolicy.from_env()
    given = {"attempts": attempts, "timeout": timeout, "backoff": backoff, "max_wait": max_wait}
    policy = RetryPolicy(**{k: (v if v is not None else getattr(base, k)) for k, v in given.items()})  # type: ignore[arg-type]
    return EndpointSource(url, lang=lang, policy=policy, batch_size=batch_size, fallback=fallback)


def wikidata(
    *,
    attempts: int | None = None,
    timeout: float | None = None,
    backoff: float | None = None,
    max_wait: float | None = None,
    lang: str = "en",
    fallback: str | None = None,
) -> EndpointSource:
    """`wikidata`: Wikidata's query service, with the same options as `sparql:`. A mirror
    (QLever, a local Blazegraph) is reached by setting KALMA_WIKIDATA_ENDPOINT to its URL."""
    url = os.environ.get("KALMA_WIKIDATA_ENDPOINT") or WIKIDATA_ENDPOINT
    return endpoint(url, attempts=attempts, timeout=timeout, backoff=backoff, max_wait=max_wait, lang=lang, fallback=fallback)
