"""`openai:<model>` and `openai-compatible:<base_url>:<model>` (vLLM, llama.cpp server, TGI…).

The key comes from the environment only (OPENAI_API_KEY; KALMA_COMPAT_API_KEY for compatible
servers, which often need none) and is never cached, logged or written. The client retries 429
and 5xx answers itself, honouring Retry-After. Chats in a batch run on a small thread pool.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .base import GenParams, Generation, LLM, Message, TokenLogprob

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


def prices() -> dict[str, tuple[float, float]]:
    """USD per million (prompt, completion) tokens, from KALMA_PRICES='{"model": [in, out]}'."""
    raw = os.environ.get("KALMA_PRICES", "")
    return {k: (float(v[0]), float(v[1])) for k, v in json.loads(raw).items()} if raw else {}


class OpenAIChat(LLM):
    def __init__(self, model: str, base_url: str | None = None, workers: int = 4, max_retries: int = 5, timeout: float = 120.0):
        self.model, self.base_url = model, base_url
        self.spec = f"openai-compatible:{base_url}:{model}" if base_url else f"openai:{model}"
        self.batch_size = workers * 4
        self.workers, self.max_retries, self.timeout = workers, max_retries, timeout
        self._client: Any = None

    def client(self) -> Any:
        if self._client is None:
            import openai

            key = os.environ.get("KALMA_COMPAT_API_KEY", os.environ.get("OPENAI_API_KEY", "EMPTY")) if self.base_url else os.environ.get("OPENAI_API_KEY")
            if not key:
                raise RuntimeError("openai backend: set OPENAI_API_KEY in the environment")
            self._client = openai.OpenAI(api_key=key, base_url=self.base_url, max_retries=self.max_retries, timeout=self.timeout)
        return self._client

    def _one(self, messages: list[Message], params: GenParams) -> Generation:
        kwargs: dict[str, Any] = {
            "model": self.model, "messages": messages, "temperature": params.temperature,
            "top_p": params.top_p, "max_tokens": params.max_tokens,
        }
        if params.seed is not None:
            kwargs["seed"] = params.seed
        if params.logprobs:
            kwargs.update(logprobs=True, top_logprobs=params.logprobs)
        resp = self.client().chat.completions.create(**kwargs)
        choice = resp.choices[0]
        lps = None
        if params.logprobs and choice.logprobs and choice.logprobs.content:
            lps = [TokenLogprob(t.token, t.logprob, {a.token: a.logprob for a in (t.top_logprobs or [])}) for t in choice.logprobs.content]
        usage = resp.usage
        pt, ct = (usage.prompt_tokens, usage.completion_tokens) if usage else (0, 0)
        price = prices().get(self.model)
        return Generation(
            text=(choice.message.content or "").strip(), model=self.spec, logprobs=lps,
            prompt_tokens=pt, completion_tokens=ct,
            cost_usd=(pt * price[0] + ct * price[1]) / 1e6 if price else None,
        )

    def _generate(self, batch: Sequence[list[Message]], params: GenParams) -> list[Generation]:
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            return list(pool.map(lambda m: self._one(m, params), batch))
