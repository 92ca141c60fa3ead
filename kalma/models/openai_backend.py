"""`openai:<model>` and `openai-compatible:<base_url>:<model>` (vLLM, llama.cpp server, TGI…):
an LLM over /chat/completions, and an LM scorer over /completions (`compatible_scorer`).

Keys come from the environment only and are never cached, logged or written:
- `openai:` sends OPENAI_API_KEY, and only to OpenAI's own API (the base URL is pinned, so an
  OPENAI_BASE_URL in the environment cannot redirect the key elsewhere);
- `openai-compatible:` sends KALMA_COMPAT_API_KEY when it is set, and no Authorization header
  at all otherwise: a local or third-party server never sees the OpenAI key.
A key that a server echoes back in an error message is masked before the error goes anywhere.
Cached answers are keyed by what the server says it serves (`cache_identity`), so a server
restarted under the same URL and name with another model behind it is never answered from
the cache of the first.
A server that reports nothing but the model's name (llama.cpp's Python server) cannot tell
one GGUF from another: its answers are cached only under an identity the user vouches for,
`openai-compatible:URL:NAME,identity=…` (e.g. the GGUF file's name and digest).
The client retries 429 and 5xx answers itself, honouring Retry-After. Up to `concurrency`
requests are in flight at once (32 for a compatible server, 8 for OpenAI; KALMA_CONCURRENCY);
a server that runs one request at a time (llama.cpp's Python server) queues the rest: keep it low
there, so that queued requests do not reach the timeout.
Each answer is handed on and cached as it arrives. A server that refuses the connection before
its first answer is named on stderr at once and asked again for `wait` seconds (`,wait=SECONDS`,
default 30: a vLLM started beside the run takes that long to listen), each attempt said, then
given up in one line; Ctrl-C stops the wait. Once it has answered, a refusal is said at once.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from itertools import accumulate
from typing import Any
from urllib.parse import urlsplit

from ..errors import BackendError, Interrupted, mask_secrets
from ..jsonl import dumps
from .base import LLM, Generation, GenParams, LMScorer, Message, TokenLogprob, separator

OPENAI_API = "https://api.openai.com/v1"
_COMPAT_RE = re.compile(r"^(https?://[^/:\s]+(?::\d+)?(?:/[^:\s]*)?):(.+)$")


def parse_compatible(arg: str) -> tuple[str, str]:
    """`http://host:8000/v1:llama3:8b` → (`http://host:8000/v1`, `llama3:8b`).

    >>> parse_compatible("http://127.0.0.1:8000/v1:meta-llama/Llama-3.1-8B-Instruct")
    ('http://127.0.0.1:8000/v1', 'meta-llama/Llama-3.1-8B-Instruct')
    """
    m = _COMPAT_RE.match(arg)
    if not m:
        raise ValueError(f"openai-compatible spec must be <base_url>:<model>, got {arg!r}")
    return m.group(1), m.group(2)


WAIT = 30.0  # seconds a server that refuses the connection is waited for before its first answer


def compatible(
    argument: str, *, concurrency: int | None = None, max_retries: int = 5, timeout: float = 120.0, identity: str | None = None, wait: float = WAIT
) -> OpenAIChat:
    """`openai-compatible:<base_url>:<model>`: a vLLM, TGI or llama.cpp server. `identity` is what
    the user vouches the server runs (cached answers are keyed by it, over what /models says);
    `wait` the seconds a server that refuses the connection is waited for before its first answer."""
    base, model = parse_compatible(argument)
    return OpenAIChat(model, base_url=base, concurrency=concurrency, max_retries=max_retries, timeout=timeout, identity=identity, wait=wait)


def compatible_scorer(
    argument: str, *, concurrency: int | None = None, max_retries: int = 5, timeout: float = 120.0, identity: str | None = None, wait: float = WAIT
) -> CompletionsScorer:
    """`openai-compatible:<base_url>:<model>` as an LM scorer (`CompletionsScorer`)."""
    base, model = parse_compatible(argument)
    return CompletionsScorer(model, base_url=base, concurrency=concurrency, max_retries=max_retries, timeout=timeout, identity=identity, wait=wait)


def _connects(host: str, port: int) -> bool:
    """Whether something listens at (host, port); False when the connection is refused."""
    try:
        socket.create_connection((host, port), timeout=3).close()
    except ConnectionRefusedError:
        return False
    return True


def reachable(base_url: str, spec: str, wait: float = 0.0) -> None:
    """Fail in one line when nothing answers at `base_url`: a refused connection is named on
    stderr at once and tried again for `wait` seconds (a server started beside the run), each
    attempt said; an unknown host is no reason to wait, nor for the client's rounds of retries."""
    url = urlsplit(base_url)
    host, port = url.hostname or "", url.port or (443 if url.scheme == "https" else 80)
    try:
        if _connects(host, port):
            return
        refused = f"{spec}: nothing answers at {base_url} (connection refused"
        if wait <= 0:
            raise BackendError(f"{refused}); is the server running?")
        began, attempt, pause = time.monotonic(), 1, 0.5
        try:  # the whole wait, said line included: Ctrl-C at any moment of it is said as such
            print(f"note: {refused}); waiting up to {wait:g} s for it to start (,wait=SECONDS changes this; Ctrl-C stops)", file=sys.stderr, flush=True)
            while (left := wait - (time.monotonic() - began)) > 0:
                time.sleep(min(pause, left))
                attempt, pause = attempt + 1, min(pause * 2, 5.0)  # soon at first (a server a moment late), then every 5 s
                if _connects(host, port):
                    print(f"note: {base_url} answered at attempt {attempt}, after {time.monotonic() - began:.1f} s", file=sys.stderr, flush=True)
                    return
                print(f"note: attempt {attempt}: still refused after {time.monotonic() - began:.1f} s of {wait:g}", file=sys.stderr, flush=True)
        except KeyboardInterrupt:
            raise Interrupted(f"interrupted while waiting for {base_url} ({attempt} attempts); nothing was sent to it") from None
        raise BackendError(f"{refused} for {wait:g} s, {attempt} attempts); is the server running? (,wait=SECONDS waits longer)")
    except socket.gaierror as exc:
        raise BackendError(f"{spec}: cannot resolve {host} ({exc.strerror}); is this machine online?") from None
    except OSError as exc:
        raise BackendError(f"{spec}: cannot reach {base_url} ({exc.strerror or type(exc).__name__}); is this machine online?") from None


def reachable_first(*backends: object) -> None:
    """`reachable` for each backend over an API, before a command loads anything else (spaCy, a
    local model, a knowledge graph): a server that is not there is said at once, not after them."""
    for b in backends:
        if isinstance(b, Endpoint):
            b.reach()


def prices() -> dict[str, tuple[float, float]]:
    """USD per million (prompt, completion) tokens, from KALMA_PRICES='{"model": [in, out]}'."""
    raw = os.environ.get("KALMA_PRICES", "")
    return {k: (float(v[0]), float(v[1])) for k, v in json.loads(raw).items()} if raw else {}


class Endpoint:
    """What every backend over the OpenAI API shares: the key rules, one client, the cache
    identity, and requests fanned out `concurrency` at a time."""

    spec: str

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        *,
        concurrency: int | None = None,
        max_retries: int = 5,
        timeout: float = 120.0,
        identity: str | None = None,
        wait: float = WAIT,
    ):
        self.model, self.base_url, self.identity = model, base_url, identity
        self.wait, self._reached = wait, False  # a server is waited for only until it first listens
        self.spec = f"openai-compatible:{base_url}:{model}" if base_url else f"openai:{model}"
        # Requests in flight at once: a local vLLM/TGI server batches what it is sent, so it is
        # given many; OpenAI's API fewer. KALMA_CONCURRENCY overrides both. 429s and Retry-After
        # are honoured by the client's own retries.
        default = int(os.environ.get("KALMA_CONCURRENCY") or (32 if base_url else 8))
        self.concurrency = max(1, concurrency or default)
        self.batch_size = self.concurrency * 4
        self.max_retries, self.timeout = max_retries, timeout
        self._client: Any = None
        self._headers: dict[str, Any] = {}
        self._identity: tuple[str | None, str] | None = None  # (cache identity, what it rests on)
        if base_url is None and not os.environ.get("OPENAI_API_KEY"):  # fail before any work, not at the first call
            raise BackendError(f"{self.spec}: set OPENAI_API_KEY in the environment")

    def reach(self) -> None:
        """`reachable`, waiting `wait` seconds for a server that has not listened yet."""
        reachable(self.base_url or OPENAI_API, self.spec, 0.0 if self._reached else self.wait)
        self._reached = True

    def client(self) -> Any:
        if self._client is None:
            import openai

            if self.base_url is None:
                key = os.environ.get("OPENAI_API_KEY")
                if not key:
                    raise BackendError(f"{self.spec}: set OPENAI_API_KEY in the environment")
                base, self._headers = OPENAI_API, {}
            else:
                key = os.environ.get("KALMA_COMPAT_API_KEY") or ""
                base = self.base_url
                # The client insists on a key: with none to send it gets a placeholder and the header is
                # omitted; OpenAI account headers (OPENAI_ORG_ID, OPENAI_PROJECT_ID) never go to other servers.
                self._headers = {"OpenAI-Organization": openai.Omit(), "OpenAI-Project": openai.Omit()}
                if not key:
                    self._headers["Authorization"] = openai.Omit()
            self._client = openai.OpenAI(api_key=key or "no-key", base_url=base, max_retries=self.max_retries, timeout=self.timeout)
        return self._client

    def cache_identity(self) -> str | None:
        """The spec plus what /v1/models says of the model: its root (vLLM's weights path), its
        meta (llama.cpp's size and shape), else its creation time (OpenAI's is the model's own;
        a server that stamps each reply with the time gets no cache hits, which is safe). A server
        that does not list the model is not cached. Asked at every call of `chat_many`: a server
        may be restarted with other weights while a long run goes on."""
        self._identity = self._ask_identity()
        return self._identity[0]

    def identity_note(self) -> str:
        """What the cache key rests on now, for provenance."""
        self._identity = self._ask_identity()
        return self._identity[1]

    def _ask_identity(self) -> tuple[str | None, str]:
        if self.identity:  # the user's word, over whatever the server says
            return f"{self.spec}|identity={self.identity}", f"cached by the identity given: {self.identity}"
        client = self.client()
        try:
            # one retry at most: a server that does not answer this is not cached, and says so
            listed = client.with_options(max_retries=1).models.list(extra_headers=self._headers, timeout=min(self.timeout, 30.0))
            card = next((m for m in listed.data if m.id == self.model), None)
        except Exception as exc:  # noqa: BLE001 - any failure means: identity unknown
            return None, f"not cached: /models failed ({type(exc).__name__}: {mask_secrets(str(exc))[:200]})"
        if card is None:
            return None, f"not cached: /models does not list {self.model!r}"
        fields = card.model_dump()
        chosen = {k: fields[k] for k in ("root", "parent", "meta") if fields.get(k) not in (None, "", {})}
        if not chosen and fields.get("created") is not None:
            chosen = {"created": fields["created"], "owned_by": fields.get("owned_by")}
        if not chosen:
            return None, f"not cached: /models gives no root, meta or creation time for {self.model!r} (say what it serves with ,identity=…)"
        ident = dumps(chosen, sort_keys=True, default=str)
        return f"{self.spec}|{ident}", f"cached by /models: {ident[:300]}"

    def _request(self, create: Any, **kwargs: Any) -> Any:
        """One API call; any failure re-raised as a BackendError with an echoed key masked, and a
        server that went away mid-run said plainly."""
        try:
            return create(model=self.model, **kwargs, extra_headers=self._headers)
        except Exception as exc:  # noqa: BLE001 - re-raised with any echoed key masked
            if type(exc).__name__ == "APIConnectionError":
                reachable(self.base_url or OPENAI_API, self.spec)
            raise BackendError(f"{self.spec}: {type(exc).__name__}: {mask_secrets(str(exc))}") from None

    def _fan_out(self, items: Sequence[Any], one: Any) -> Iterator[tuple[int, Any]]:
        """`one(item)` for every item, up to `concurrency` requests in flight; each answer handed
        on as it arrives. The first failure is raised once the requests in flight have ended,
        their answers handed on first."""
        error: BaseException | None = None
        self.client()  # one client (and connection pool) for all the threads
        self.reach()  # a server that is not there: named now, not after rounds of retries
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = {pool.submit(one, item): i for i, item in enumerate(items)}
            for fut in as_completed(futures):
                try:
                    found = fut.result()
                except Exception as exc:  # noqa: BLE001 - raised below, after the others are handed on
                    if error is None:
                        error = exc
                        for other in futures:  # nothing new is sent once one has failed
                            other.cancel()
                    continue
                yield futures[fut], found
        if error is not None:
            raise error

    def _in_order(self, items: Sequence[Any], one: Any) -> list[Any]:
        """`_fan_out`'s answers in the items' order."""
        found = dict(self._fan_out(items, one))
        return [found[i] for i in range(len(items))]


class OpenAIChat(Endpoint, LLM):
    """An LLM over /chat/completions."""

    def _one(self, messages: list[Message], params: GenParams) -> Generation:
        kwargs: dict[str, Any] = {
            "messages": messages,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "max_tokens": params.max_tokens,
        }
        if params.seed is not None:
            kwargs["seed"] = params.seed
        if params.logprobs:
            kwargs.update(logprobs=True, top_logprobs=params.logprobs)
        resp = self._request(self.client().chat.completions.create, **kwargs)
        choice = resp.choices[0]
        lps = None
        if params.logprobs and choice.logprobs and choice.logprobs.content:
            lps = [TokenLogprob(t.token, t.logprob, {a.token: a.logprob for a in (t.top_logprobs or [])}) for t in choice.logprobs.content]
        usage = resp.usage
        pt, ct = (usage.prompt_tokens, usage.completion_tokens) if usage else (0, 0)
        price = prices().get(self.model)
        # Servers that parse reasoning out return it beside the content: `reasoning_content`
        # (DeepSeek, vLLM), `reasoning` (newer vLLM, OpenRouter); the client keeps unknown fields.
        thoughts = getattr(choice.message, "reasoning_content", None) or getattr(choice.message, "reasoning", None)
        return Generation(
            text=(choice.message.content or "").strip(),
            model=self.spec,
            logprobs=lps,
            prompt_tokens=pt,
            completion_tokens=ct,
            cost_usd=(pt * price[0] + ct * price[1]) / 1e6 if price else None,
            reasoning=thoughts.strip() if isinstance(thoughts, str) and thoughts.strip() else None,
            finish_reason=choice.finish_reason,
            system_fingerprint=getattr(resp, "system_fingerprint", None),
        )

    def _generate(self, batch: Sequence[list[Message]], params: GenParams) -> list[Generation]:
        return self._in_order(batch, lambda messages: self._one(messages, params))

    def _generate_stream(self, batch: Sequence[list[Message]], params: GenParams) -> Iterator[tuple[int, Generation]]:
        return self._fan_out(batch, lambda messages: self._one(messages, params))


class CompletionsScorer(Endpoint, LMScorer):
    """A served model as the LM scorer: the log-probability of each token of a text after its
    context, read from /completions with `echo` and `logprobs` (vLLM, llama.cpp's Python server
    and TGI's OpenAI layer give them for the prompt), so a GPU server, or a cluster behind one
    URL, scores for a build that runs anywhere.

    The prompt is the context, a space, and the text. The server tokenizes it as it tokenizes its
    own requests, with its own start token: a text scored with no context loses its first token
    (the API gives the first prompt token no log-probability), where a local backend scores it
    after its BOS. Which tokens are the text's is read from the end of the prompt, so a start
    token the server lists first (vLLM lists `<|begin_of_text|>` and counts its characters in
    the offsets) moves nothing."""

    def _score(self, batch: Sequence[Any]) -> list[list[tuple[float, int, int]]]:
        return self._in_order(batch, self._one)

    def _one(self, item: tuple[str, str]) -> list[tuple[float, int, int]]:
        context, text = item
        sep = separator(context, text)
        prompt = context + sep + text
        resp = self._request(self.client().completions.create, prompt=prompt, echo=True, logprobs=1, max_tokens=1, temperature=0.0)
        return text_tokens(resp, prompt, len(context), len(sep), self.spec)


def text_tokens(resp: Any, prompt: str, start: int, sep: int, spec: str) -> list[tuple[float, int, int]]:
    """(log-prob, start, end) of the prompt's tokens from character `start` on, from an echoed
    /completions response; start and end are offsets into the text, which follows `sep`
    separating characters at `start`.

    The generated tokens (`usage.completion_tokens`, one when the server does not say) are cut
    off the end. Where the prompt's token strings join to the prompt, after whatever start token
    the server put first, offsets are counted along them; otherwise the server's `text_offset`
    is taken as OpenAI defines it, from the prompt's first character."""
    lp = resp.choices[0].logprobs if resp.choices else None
    if lp is None or not lp.token_logprobs or not lp.tokens or lp.text_offset is None:
        raise BackendError(f"{spec}: /completions gave no prompt log-probabilities (echo with logprobs); this server cannot score")
    usage = getattr(resp, "usage", None)
    generated = usage.completion_tokens if usage is not None and usage.completion_tokens is not None else 1
    n = len(lp.tokens) - generated
    if n <= 0:  # the generated tokens' values only: llama.cpp's C++ server, which ignores `echo`
        raise BackendError(f"{spec}: /completions gave log-probabilities for the generated tokens only, not the prompt's (echo); this server cannot score")
    tokens, values = lp.tokens[:n], lp.token_logprobs[:n]
    joined = "".join(tokens)
    if joined.endswith(prompt):
        lead = len(joined) - len(prompt)  # a start token's characters
        offsets = [at - lead for at in accumulate((len(t) for t in tokens), initial=0)]
    else:
        offsets = list(lp.text_offset[:n])
    out = []
    for token, offset, value in zip(tokens, offsets, values):
        # A token that starts at the separator belongs to the text (` word` is one token).
        if offset < start or value is None:
            continue
        a = max(0, offset - start - sep)
        out.append((float(value), a, max(a, offset + len(token) - start - sep)))
    return out
