"""The model interfaces: LLMs, entailment and LM scoring, plus their caching wrappers.

A backend implements one or two small methods (`_generate`, `_entail`, `_score`); the base
classes add deduplication, batching and the on-disk cache, so every backend gets them the
same way (the lm-evaluation-harness pattern).
"""

from __future__ import annotations

import math
import re
from abc import abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..cache import Cache, get_cache, make_key
from ..progress import batch_done

Message = dict[str, str]  # {"role": "system"|"user"|"assistant", "content": ...}


@dataclass(frozen=True)
class GenParams:
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    seed: int | None = None
    logprobs: int = 0  # top alternatives per generated token; 0 = none

    @property
    def cacheable(self) -> bool:
        """Greedy decoding is deterministic; sampling is reproducible only with a seed."""
        return self.temperature == 0 or self.seed is not None


@dataclass
class TokenLogprob:
    token: str
    logprob: float
    top: dict[str, float] = field(default_factory=dict)


@dataclass
class Generation:
    text: str
    model: str
    logprobs: list[TokenLogprob] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    reasoning: str | None = None  # a reasoning model's thoughts, kept apart from `text`
    finish_reason: str | None = None  # "stop", or "length" when max_tokens cut the text
    system_fingerprint: str | None = None  # the server's configuration, as OpenAI reports it
    cached: bool = False  # served from the call cache, not computed in this run

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Generation:
        lps = d.get("logprobs")
        return cls(**{**d, "logprobs": [TokenLogprob(**t) for t in lps] if lps is not None else None})


def cached_stream(
    namespace: str,
    keys: Sequence[str],
    items: Sequence[Any],
    compute: Callable[[list[Any]], Iterable[tuple[int, Any]]],
    batch_size: int,
    cache: Cache | None = None,
    store: bool = True,
    plan: Callable[[list[Any]], list[list[int]] | None] | None = None,
    prepare: Callable[[list[Any]], list[Any]] | None = None,
    replan: Callable[[], bool] | None = None,
) -> Iterator[tuple[str, Any, bool]]:
    """The one caching path of every backend: look all keys up at once, then compute each
    missing distinct item once, in the batches `plan` groups them into (e.g. by a token budget,
    sorted by length; default: `batch_size` items in input order). Yields (key, value, from the
    cache), cached ones first, then each computed one as `compute` hands it on ((position in
    the batch, value) pairs). What arrived is stored once per batch, also when the batch fails
    or the caller stops midway: nothing computed is lost. `prepare` turns the missing items into
    what `plan` and `compute` work on (e.g. token ids), so that work is done once. When `replan`
    says so after a batch (the backend's budget shrank: it ran out of memory), the batches not yet
    run are planned again."""
    cache = cache or get_cache()
    found = cache.get_many(list(dict.fromkeys(keys))) if store else {}
    cache.hits += sum(1 for k in keys if k in found)
    yield from ((k, v, True) for k, v in found.items())
    missing: dict[str, Any] = {}
    for k, it in zip(keys, items):
        if k not in found:
            missing.setdefault(k, it)
    todo = list(missing)
    cache.misses += len(todo)
    if not todo:
        return
    work = prepare(list(missing.values())) if prepare else list(missing.values())
    groups = (plan(work) if plan else None) or [list(range(i, min(i + batch_size, len(todo)))) for i in range(0, len(todo), batch_size)]
    finished = 0
    while groups:
        group = groups.pop(0)
        arrived: dict[str, Any] = {}
        try:
            for j, value in compute([work[i] for i in group]):
                arrived[todo[group[j]]] = value
                yield todo[group[j]], value, False
        finally:
            if store and arrived:
                cache.put_many(namespace, arrived)
        finished += len(group)
        batch_done(namespace, finished, len(todo))  # after the caller took the whole batch: its count is there
        if groups and plan and replan and replan():
            left = [i for g in groups for i in g]
            groups = [[left[j] for j in g] for g in plan([work[i] for i in left]) or [list(range(len(left)))]]


def cached_batches(
    namespace: str,
    keys: Sequence[str],
    items: Sequence[Any],
    compute: Callable[[list[Any]], list[Any]],
    batch_size: int,
    cache: Cache | None = None,
    store: bool = True,
    plan: Callable[[list[Any]], list[list[int]] | None] | None = None,
    prepare: Callable[[list[Any]], list[Any]] | None = None,
    replan: Callable[[], bool] | None = None,
) -> list[Any]:
    """`cached_stream` for a backend that computes whole batches: a value per input, in input order."""
    stream = cached_stream(namespace, keys, items, lambda b: enumerate(compute(b)), batch_size, cache, store, plan, prepare, replan)
    values = {k: v for k, v, _ in stream}
    return [values[k] for k in keys]


# Reasoning models (DeepSeek-R1, Qwen3, QwQ) write their thoughts before the answer: in tags, or
# ending at a closing tag whose opening the chat template already wrote.
_REASONING_RE = re.compile(r"\s*<(think|thinking|reasoning)>(.*?)(?:</\1>|$)", re.DOTALL | re.IGNORECASE)
_REASONING_CLOSE_RE = re.compile(r"</(?:think|thinking|reasoning)>", re.IGNORECASE)


def leading_reasoning(text: str) -> tuple[str, str] | None:
    """(thoughts, answer) when `text` opens with a reasoning block, else None. An unclosed block
    (the thoughts ran out of tokens) leaves an empty answer."""
    m = _REASONING_RE.match(text)
    if m:
        return m.group(2).strip(), text[m.end() :].strip()
    close = _REASONING_CLOSE_RE.search(text)
    if close is None or "<" + close.group(0)[2:] in text[: close.start()]:
        return None
    return text[: close.start()].strip(), text[close.end() :].strip()


def split_reasoning(g: Generation) -> Generation:
    """`g` with a leading reasoning block moved from `text` to `reasoning`, so that what is
    scored, parsed or stored as the answer is the answer."""
    found = leading_reasoning(g.text)
    if found is None:
        return g
    thoughts = "\n\n".join(t for t in (g.reasoning, found[0]) if t)
    return replace(g, text=found[1], reasoning=thoughts or None)


class Component:
    """What every model backend shares: the spec that made it, and what its cached results are
    keyed by (`cache_identity`)."""

    spec: str = ""

    def cache_identity(self) -> str | None:
        """What the cache keys this backend's results by: what computes them, not only what it is
        called. None where that cannot be known, and its results are then never cached."""
        return self.spec

    def replan(self) -> bool:
        """Whether the batches of the call under way should be planned again (a backend whose
        memory budget shrank says so once)."""
        return False


class LLM(Component):
    """Chat and completion. `spec` is the registry string that made it (e.g. `smollm2`)."""

    label_note: str = ""  # e.g. "offline template backend, not a language model"
    batch_size: int = 8

    def _prepare(self, chats: Sequence[list[Message]], params: GenParams) -> list[Any]:
        """The chats as the backend works on them (e.g. token ids, and how the call decodes them),
        made once per call."""
        return list(chats)

    def _plan(self, prepared: Sequence[Any], params: GenParams) -> list[list[int]] | None:
        """How to batch: None is `batch_size` chats in order; backends that pad override it."""
        return None

    @abstractmethod
    def _generate(self, batch: Sequence[Any], params: GenParams) -> list[Generation]:
        """Answer a batch of prepared chats (`_prepare`: the chats themselves by default)."""

    def _generate_stream(self, batch: Sequence[Any], params: GenParams) -> Iterator[tuple[int, Generation]]:
        """(position in the batch, answer) as each arrives; a backend answering one request at a
        time (a server) overrides this, so that a failure loses none that came back before it."""
        yield from enumerate(self._generate(batch, params))

    def chat_stream(self, chats: Sequence[list[Message]], params: GenParams = GenParams(), *, cache: Cache | None = None) -> Iterator[tuple[int, Generation]]:
        """(position, answer) for every chat, cached ones first, then each new one as the backend
        returns it: a run killed or failing midway keeps every answer that arrived. Identical
        chats are asked once."""
        identity = self.cache_identity() if params.cacheable else None
        keys = [make_key("llm", type(self).__name__, identity or self.spec, asdict(params), c) for c in chats]
        where: dict[str, list[int]] = {}
        for i, k in enumerate(keys):
            where.setdefault(k, []).append(i)

        def compute(batch: list[Any]) -> Iterator[tuple[int, Any]]:
            return ((j, g.to_json()) for j, g in self._generate_stream(batch, params))

        def prepare(todo: list[Any]) -> list[Any]:
            return self._prepare(todo, params)

        def plan(prepared: list[Any]) -> list[list[int]] | None:
            return self._plan(prepared, params)

        stream = cached_stream("llm", keys, list(chats), compute, self.batch_size, cache, identity is not None, plan, prepare, self.replan)
        for k, value, cached in stream:
            gen = replace(split_reasoning(Generation.from_json(value)), cached=cached)
            for i in where[k]:
                yield i, gen

    def chat_many(self, chats: Sequence[list[Message]], params: GenParams = GenParams(), *, cache: Cache | None = None) -> list[Generation]:
        """Answer many chats, in order: cached answers are reused, the rest batched through the backend."""
        out: list[Generation | None] = [None] * len(chats)
        for i, gen in self.chat_stream(chats, params, cache=cache):
            out[i] = gen
        return [g for g in out if g is not None]

    def chat(self, messages: list[Message], params: GenParams = GenParams()) -> Generation:
        return self.chat_many([messages], params)[0]


class Entailment(Component):
    """P(premise entails hypothesis) for batches of pairs."""

    approximate: bool = False  # True for rule-based stand-ins: reports must say so
    batch_size: int = 16
    three_way: bool = False  # whether `_entail3` gives (entail, neutral, contradict)
    cacheable: bool = True  # False for backends whose answers are already on disk
    abstains: bool = False  # True when a pair may get no judgement (NaN): only a metric that leaves such pairs out may use it

    @abstractmethod
    def _entail(self, pairs: Sequence[tuple[str, str]]) -> list[float]: ...

    def _plan(self, pairs: Sequence[tuple[str, str]]) -> list[list[int]] | None:
        return None

    def _relevance(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """P(the passage addresses the question) for (passage, question) pairs. By default the
        question is the hypothesis of an entailment call; backends that can ask it directly
        (an LLM judge) or need another rule (the lexical stand-in) override this."""
        return self._entail(pairs)

    def _entail3(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[float, float, float]]:
        raise TypeError(f"{self.spec} gives two-way judgements only")

    def _cached(self, kind: str, pairs: Sequence[tuple[str, str]], compute: Any, cache: Cache | None) -> list[Any]:
        identity = self.cache_identity() if self.cacheable else None
        keys = [make_key("entail", type(self).__name__, identity or self.spec, {"kind": kind}, list(p)) for p in pairs]
        return cached_batches("entail", keys, list(pairs), compute, self.batch_size, cache, store=identity is not None, plan=self._plan, replan=self.replan)

    def probs(self, pairs: Sequence[tuple[str, str]], *, cache: Cache | None = None) -> list[float]:
        """Entailment probability per pair; duplicates are computed once."""
        return [float(x) for x in self._cached("p", pairs, self._entail, cache)]

    def relevance(self, pairs: Sequence[tuple[str, str]], *, cache: Cache | None = None) -> list[float]:
        """P(passage addresses question) per (passage, question) pair ([NA] precision's §4.5 case)."""
        return [float(x) for x in self._cached("relevance", pairs, self._relevance, cache)]

    def probs3(self, pairs: Sequence[tuple[str, str]], *, cache: Cache | None = None) -> list[tuple[float, float, float]]:
        """(entailment, neutral, contradiction) per pair, for three-class backends."""
        return [tuple(x) for x in self._cached("p3", pairs, self._entail3, cache)]


class Matcher(Component):
    """A score in [0, 1] for (query, text) pairs: relevance, or a text's own quality (the query empty)."""

    note: str = ""  # a caveat reports must carry, e.g. "embedding fallback"
    batch_size: int = 32

    @abstractmethod
    def _match(self, pairs: Sequence[tuple[str, str]]) -> list[float]: ...

    def _plan(self, pairs: Sequence[tuple[str, str]]) -> list[list[int]] | None:
        return None

    def scores(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        identity = self.cache_identity()
        keys = [make_key("match", type(self).__name__, identity or self.spec, {}, list(p)) for p in pairs]
        found = cached_batches("match", keys, list(pairs), self._match, self.batch_size, store=identity is not None, plan=self._plan, replan=self.replan)
        return [float(x) for x in found]


def separator(context: str, text: str) -> str:
    """What joins a scored text to its context: a space, unless either is empty or the context
    ends in whitespace. Every scorer joins them so, local or served, so their tokens agree."""
    return " " if context and text and not context.endswith((" ", "\n")) else ""


class LMScorer(Component):
    """Token log-probabilities of texts given optional contexts. A backend turns the
    (context, text) items into its own work items once (`_prepare`, e.g. token ids), groups
    those into batches (`_plan`) and scores a batch of them (`_score`)."""

    batch_size: int = 8

    def _prepare(self, items: Sequence[tuple[str, str]]) -> list[Any]:
        return list(items)

    @abstractmethod
    def _score(self, batch: Sequence[Any]) -> list[list[tuple[float, int, int]]]:
        """For each prepared (context, text): (log-prob, start, end) of each token of `text`
        given all that precedes it; start/end are character offsets into `text`."""

    def _plan(self, prepared: Sequence[Any]) -> list[list[int]] | None:
        return None

    def token_spans(self, texts: Sequence[str], contexts: Sequence[str] | None = None, *, cache: Cache | None = None) -> list[list[tuple[float, int, int]]]:
        items = list(zip(contexts or [""] * len(texts), texts))
        identity = self.cache_identity()
        keys = [make_key("lm", type(self).__name__, identity or self.spec, {"spans": 1}, list(it)) for it in items]
        out = cached_batches(
            "lm", keys, items, self._score, self.batch_size, cache, store=identity is not None, plan=self._plan, prepare=self._prepare, replan=self.replan
        )
        return [[(float(lp), int(a), int(b)) for lp, a, b in row] for row in out]

    def token_logprobs(self, texts: Sequence[str], contexts: Sequence[str] | None = None, *, cache: Cache | None = None) -> list[list[float]]:
        return [[lp for lp, _, _ in row] for row in self.token_spans(texts, contexts, cache=cache)]

    def mean_logprob(self, texts: Sequence[str], contexts: Sequence[str] | None = None) -> list[float]:
        return [sum(lp) / len(lp) if lp else float("nan") for lp in self.token_logprobs(texts, contexts)]

    def perplexity(self, texts: Sequence[str], contexts: Sequence[str] | None = None) -> list[float]:
        return [math.exp(-m) if not math.isnan(m) else float("nan") for m in self.mean_logprob(texts, contexts)]
