"""Text quality in the G-Eval style: coherence, consistency, fluency and relevance, 1 to 5.

Card
- Measures: an LLM judge's 1-5 rating of the answer (citations stripped) on four aspects.
- Range: 1 to 5. Reported per aspect: the mean over answers (each answer's samples averaged), the
  standard deviation over all valid samples (and across answers), the number of invalid replies, and, when the judge gives token log-probabilities, the
  probability-weighted score (G-Eval's expected value over the digits 1-5).
- Parsing is strict: the first integer in the reply must lie in 1..5; anything else is counted
  invalid and never replaced by a default.
- Every criterion's prompt holds the knowledge given (G-Eval gives every criterion the source),
  the question and the answer, then the criterion. The judge's greedy reply is generated (5
  tokens); backends that share prefixes (the HF ones) run what the prompts share once (an
  entry's knowledge and question, an answer's text) and decode the replies together.
- Reference: Liu et al., G-Eval (2023), as used by KaLMA (Li et al.) §4.4. Criteria and steps
  below are this project's wording.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from kalma.citations import strip_citations
from kalma.errors import ConfigError
from kalma.languages.phrasing import ENGLISH, phrasing
from kalma.models import LLMS, GenParams, describe, get_llm
from kalma.seeds import derive_seed
from kalma.verbalize import kg_to_text

from .base import Card, EvalItem, EvalOptions, Failures, Metric, Scored, mean_std
from .figures import Figure, Mean

# The criteria, their grading steps and the prompt are the language's (`kalma.languages.phrasing`;
# English: this project's wording as before). As in G-Eval, every criterion sees the source (here
# the knowledge given); it comes first and the criterion last, so one entry's prompts share the
# knowledge and the question, and one answer's four criteria share everything but their last lines.
ASPECTS: Mapping[str, tuple[str, str]] = ENGLISH.geval_aspects
PROMPT = ENGLISH.geval_prompt
TOP = 20  # alternatives read at the score's token: enough that every digit with any weight is among them
_FIRST_INT = re.compile(r"-?\d+")


SELF_JUDGED = "G-Eval's judge is the model whose answers it scores"


def _model_key(name: str) -> str:
    """A model's name without backend, server or options: `hf:Org/Name,dtype=bf16` and `Org/Name` are one."""
    return name.split(",")[0].split(":")[-1].split("/")[-1].strip().lower()


def self_judged(judge: str | None, answer_models: Sequence[str]) -> str | None:
    """The one-line warning when the G-Eval judge scores its own answers (G-Eval's authors found an
    LLM judge prefers its own style), else None."""
    if not judge:
        return None
    mine = [m for m in answer_models if _model_key(m) and _model_key(m) == _model_key(judge)]
    return f"{SELF_JUDGED} ({judge} scores answers by {', '.join(mine)}): a judge favours its own style, so read its ratings with care." if mine else None


def judge_chats(items: Sequence[EvalItem], language: str = "en") -> list[list[dict[str, str]]]:
    """The judge's prompts in `language`: for each item, one per criterion, in ASPECTS order (a
    language without written text gets the English ones: the judge replies with a digit)."""
    ph = phrasing(language)
    chats = []
    for it in items:
        answer, knowledge = strip_citations(it.answer.text, it.language), kg_to_text(it.kg) or ("(none)" if ph.code == "en" else ph.no_knowledge)
        for aspect in ASPECTS:
            criterion, steps = ph.geval_aspects[aspect]
            text = ph.geval_prompt.format(criterion=criterion, steps=steps, knowledge=knowledge, question=it.question, answer=answer)
            chats.append([{"role": "user", "content": text}])
    return chats


def parse_score(reply: str) -> int | None:
    """The first integer in the reply if it lies in 1..5, else None (invalid).

    >>> [parse_score(r) for r in ["4", "Score: 5/5", "10", "", "four", "0 - bad"]]
    [4, 5, None, None, None, None]
    """
    m = _FIRST_INT.search(reply)
    if not m:
        return None
    n = int(m.group(0))
    return n if 1 <= n <= 5 else None


def weighted_score(gen_logprobs: list | None) -> float | None:
    """Expected score over 1..5 from the top log-probs at the token holding the reply's first
    number; None when that number is not a lone digit 1-5 (the reply is then invalid too)."""
    import math

    digits = {"1", "2", "3", "4", "5"}
    for tok in gen_logprobs or []:
        if any(ch.isdigit() for ch in tok.token):
            if tok.token.strip() not in digits:
                return None
            weights = {int(t.strip()): math.exp(lp) for t, lp in tok.top.items() if t.strip() in digits}
            total = sum(weights.values())
            return sum(k * w for k, w in weights.items()) / total if total else None
    return None


def pooled_std(groups: Sequence[tuple[int, float, float]]) -> float | None:
    """Standard deviation of all samples from per-answer (count, mean, population std).

    >>> round(pooled_std([(2, 4.0, 1.0), (1, 2.0, 0.0)]), 4)  # samples 3, 5, 2
    1.2472
    """
    n = sum(g[0] for g in groups)
    if not n:
        return None
    mean = sum(c * m for c, m, _ in groups) / n
    return max(0.0, sum(c * (s * s + m * m) for c, m, s in groups) / n - mean * mean) ** 0.5


class TextQuality(Metric):
    name = "geval"
    card = Card("G-Eval style 1-5 ratings of coherence, consistency, fluency, relevance", "1-5", "Liu et al. 2023; KaLMA §4.4")
    needs = ("judge",)
    outputs = tuple(f"{a}_{k}" for a in ASPECTS for k in ("mean", "std_across_answers", "std", "weighted_mean", "invalid"))
    scales = {k: "count" if k.endswith("_invalid") else "1-5" for k in outputs}

    def __init__(self, options: EvalOptions, *, samples: int = 1, language: str | None = None):
        super().__init__(options)
        self.samples = samples
        # the dataset's language (`kalma evaluate` reads it from the header): a French dataset's
        # answers are judged on French instructions; an explicit `language=` must agree with it
        self.language = phrasing(options.language if language is None else language, "geval:language").code
        if self.language != phrasing(options.language).code:
            raise ConfigError(f"geval:language={language} but the dataset is in {options.language} (its header's language): give one")

    def models(self) -> dict[str, str]:
        return {"geval": describe(self.options.judge, LLMS)}

    def score(self, items: Sequence[EvalItem]) -> list[Scored]:
        llm = get_llm(self.model_spec("judge"))
        n = max(1, self.samples)
        owner = [(i, aspect) for i in range(len(items)) for aspect in ASPECTS]
        chats = judge_chats(items, self.language)
        per: dict[tuple[int, str], list] = {k: [] for k in owner}
        for s in range(n):
            # One greedy reply for n=1; with more samples, seeded sampling so reruns hit the cache.
            params = GenParams(temperature=0.0 if n == 1 else 1.0, max_tokens=5, seed=derive_seed(self.options.seed, "geval", s), logprobs=TOP)
            for key, gen in zip(owner, llm.chat_many(chats, params)):
                per[key].append(gen)
        out = []
        for i in range(len(items)):
            values: dict[str, float | None] = {}
            counts: dict[str, int] = {}
            unreadable: list[str] = []
            for aspect in ASPECTS:
                gens = per[(i, aspect)]
                scores = [parse_score(g.text) for g in gens]
                unreadable += [g.text[:24] for g, x in zip(gens, scores) if x is None]
                valid = [float(x) for x in scores if x is not None]
                weighted = [w for g, x in zip(gens, scores) if x is not None and (w := weighted_score(g.logprobs)) is not None]
                values[aspect], values[f"{aspect}_sample_std"] = mean_std(valid)
                values[f"{aspect}_weighted"] = mean_std(weighted)[0]
                counts[f"{aspect}_valid"] = len(valid)
                counts[f"{aspect}_invalid"] = len(scores) - len(valid)
            out.append(Scored(values, counts, details={"unreadable": unreadable[:2]} if unreadable else {}))
        return out

    def failures(self, rows: Sequence[Scored]) -> Failures | None:
        asked = sum(r.counts.get(f"{a}_valid", 0) + r.counts.get(f"{a}_invalid", 0) for r in rows for a in ASPECTS)
        bad = sum(r.counts.get(f"{a}_invalid", 0) for r in rows for a in ASPECTS)
        examples = [e for r in rows for e in r.details.get("unreadable", [])]
        return Failures(self.options.judge or "none", asked, bad, examples, "ratings") if asked else None

    def figures(self) -> dict[str, Figure]:
        # The spreads and the counts of invalid replies are reported without an interval.
        return {f"{a}_{k}": Mean(a if k == "mean" else f"{a}_weighted") for a in ASPECTS for k in ("mean", "weighted_mean")}

    def aggregate(self, rows: Sequence[Scored]) -> tuple[dict[str, float | None], dict[str, int]]:
        values: dict[str, float | None] = {}
        dropped: dict[str, int] = {}
        for aspect in ASPECTS:
            valid = sum(r.counts.get(f"{aspect}_valid", 0) for r in rows)
            invalid = sum(r.counts.get(f"{aspect}_invalid", 0) for r in rows)
            if Failures("", valid + invalid, invalid).over_limit:  # a number from the few that parsed would mislead
                values.update({f"{aspect}_{k}": None for k in ("mean", "std_across_answers", "std", "weighted_mean")})
                values[f"{aspect}_invalid"], dropped[f"{aspect}_mean"] = float(invalid), len(rows)
                continue
            scored = [(r, v) for r in rows if (v := r.values.get(aspect)) is not None]
            vals = [v for _, v in scored]
            values[f"{aspect}_mean"], values[f"{aspect}_std_across_answers"] = mean_std(vals)
            values[f"{aspect}_std"] = pooled_std([(r.counts[f"{aspect}_valid"], v, r.values.get(f"{aspect}_sample_std") or 0.0) for r, v in scored])
            values[f"{aspect}_weighted_mean"] = mean_std([w for r in rows if (w := r.values.get(f"{aspect}_weighted")) is not None])[0]
            values[f"{aspect}_invalid"] = float(sum(r.counts.get(f"{aspect}_invalid", 0) for r in rows))
            dropped[f"{aspect}_mean"] = len(rows) - len(vals)
        return values, dropped
