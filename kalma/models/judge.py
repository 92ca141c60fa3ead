"""`llm:<llm spec>`: entailment judged by an LLM, P(yes) from log-probs when it gives them."""

from __future__ import annotations

import math
from collections.abc import Sequence

from .base import LLM, Entailment, GenParams, Message

PROMPT = "Decide whether the statement follows from the passage alone.\n\nPassage: {premise}\nStatement: {hypothesis}\n\nReply with one word, yes or no."
RELEVANCE_PROMPT = (
    "Decide whether the passage addresses the question at all, even partly or wrongly.\n\n"
    "Question: {hypothesis}\nPassage: {premise}\n\n"
    "Reply with one word, yes or no."
)


def from_spec(argument: str) -> LLMJudgeEntailment:
    """`llm:<LLM spec>`: the judge is any LLM the registry can build, options included."""
    from . import get_llm

    return LLMJudgeEntailment(get_llm(argument))


class LLMJudgeEntailment(Entailment):
    max_tokens = 3  # a word, after any leading whitespace token

    def __init__(self, llm: LLM):
        self.llm = llm
        self.spec = f"llm:{llm.spec}"
        self.batch_size = max(1, llm.batch_size)
        # replies this process asked for and could not read (neither yes nor no): reports say how many
        self.asked, self.unreadable, self.examples = 0, 0, []  # type: tuple[int, int, list[str]]

    def cache_identity(self) -> str | None:
        """The judging LLM's: what it keys its own answers by (a server's model card, a folder's content)."""
        inner = self.llm.cache_identity()
        return f"llm:{inner}" if inner is not None else None

    def _entail(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return self._yes(self._chats(pairs))

    def _relevance(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return self._yes([[{"role": "user", "content": RELEVANCE_PROMPT.format(premise=p, hypothesis=h)}] for p, h in pairs])

    def _chats(self, pairs: Sequence[tuple[str, str]]) -> list[list[Message]]:
        """The entailment question for each pair, as this judge asks it."""
        return [[{"role": "user", "content": PROMPT.format(premise=p, hypothesis=h)}] for p, h in pairs]

    def _p_yes(self, top: dict[str, float]) -> float | None:
        """P(yes) from the first token's top log-probabilities: yes against no (None when neither is there)."""
        yes = sum(math.exp(v) for k, v in top.items() if k.strip().lower() == "yes")
        no = sum(math.exp(v) for k, v in top.items() if k.strip().lower() == "no")
        return yes / (yes + no) if yes + no > 0 else None

    def _yes(self, chats: list[list[Message]]) -> list[float]:
        """P(yes) per chat: from the first token's log-probs when given, else the reply's word."""
        out = []
        for gen in self.llm.chat_many(chats, GenParams(temperature=0.0, max_tokens=self.max_tokens, logprobs=5)):
            p = self._p_yes(gen.logprobs[0].top) if gen.logprobs else None
            if p is not None:
                out.append(p)
                continue
            word = gen.text.strip().lower()
            self.asked += 1
            if not word.startswith(("yes", "no")):
                self.unreadable += 1
                self.examples = (self.examples + [gen.text[:24]])[:5]
            out.append(1.0 if word.startswith("yes") else 0.0)  # an unreadable reply counts as no, and is reported
        return out
