"""Evolutionary question generation (paper §2.2, Appendix A.3) for one resolved pair.

Round 1 has the LLM annotate the seed paragraph with pool triples, keeping only annotations
that exist in the pool. Rounds 2..R each select one unused, non-trivial triple by the selection
score, and have the LLM add one sentence that cites it; a sentence that does not carry the
triple is retried, then the round is skipped, and either way the round is recorded. Finally the
LLM writes a general and a specific question for the final paragraph with citations stripped.
The minimum knowledge set is every triple validated along the way.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass

from kalma.biokalma import strip_question_prefix
from kalma.citations import parse_answer, strip_citations
from kalma.models import LLM, GenParams, LMScorer
from kalma.properties import Vocabulary
from kalma.schema import Candidate, DatasetEntry, KnowledgeGraph, RoundTrace, SeedRecord, Triple

from . import prompts
from .selection import TRIVIAL_RELATIONS, selection_scores, template_sentence


@dataclass
class EvolveConfig:
    rounds: int = 5
    alpha: float = 0.5
    attempts: int = 2
    temperature: float = 0.7
    max_tokens: int = 160


def clean_question(text: str) -> str:
    """First line, without a `question:` prefix or quotes (the authors' release kept 978)."""
    line = next((x for x in text.strip().splitlines() if x.strip()), "")
    return strip_question_prefix(line).strip().strip('"“”').strip()


def cited_keys(text: str, vocab: Vocabulary) -> list[tuple[str, str, str]]:
    """The facts `text` cites, by property identity (an LLM may name a property by an alias)."""
    return [vocab.citation_key(c.qid, c.relation, c.value) for c in parse_answer(text, vocab).citations]


def evolve(
    entry_id: str,
    record: SeedRecord,
    people: tuple[str, str],
    pool: KnowledgeGraph,
    llm: LLM,
    scorer: LMScorer,
    counts: Counter[str],
    n: int,
    cfg: EvolveConfig,
    seed: int,
) -> DatasetEntry:
    vocab = Vocabulary.of(pool)
    index = {vocab.triple_key(t): t for t in pool.triples()}
    trace: list[RoundTrace] = []

    def params(attempt: int) -> GenParams:
        return GenParams(temperature=cfg.temperature, max_tokens=cfg.max_tokens, seed=seed + attempt)

    # Round 1: annotate the seed paragraph.
    out = llm.chat(prompts.annotate(record.paragraph, pool), params(0)).text
    same_text = difflib.SequenceMatcher(None, strip_citations(out).lower(), record.paragraph.lower()).ratio() >= 0.8
    kept = list(dict.fromkeys(k for k in cited_keys(out, vocab) if k in index)) if same_text else []
    paragraph = out if same_text else record.paragraph
    trace.append(
        RoundTrace(
            round=1,
            kind="annotate",
            kept=[index[k] for k in kept],
            paragraph=paragraph,
            status="ok" if same_text else "failed",
            note="" if same_text else "the annotated text no longer matched the seed paragraph; annotations dropped",
        )
    )
    used = set(kept)
    minimum: list[Triple] = [index[k] for k in kept]

    # Rounds 2..R: select one triple, extend by one sentence that cites it.
    for rnd in range(2, cfg.rounds + 1):
        cands = [t for t in pool.triples() if vocab.triple_key(t) not in used and t.relation_label.lower() not in TRIVIAL_RELATIONS]
        if not cands:
            trace.append(RoundTrace(round=rnd, kind="extend", status="skipped", note="no unused non-trivial triple left"))
            break
        context = strip_citations(paragraph)
        ppls = scorer.perplexity([template_sentence(t) for t in cands], [context] * len(cands))
        scored = selection_scores([t.relation_label for t in cands], ppls, counts, n, cfg.alpha)
        best = max(range(len(cands)), key=lambda i: (scored[i][2], -i))
        chosen = cands[best]
        used.add(vocab.triple_key(chosen))
        candidates = [Candidate(triple=t, specificity=s, coherence=c, perplexity=p, score=sc) for t, p, (s, c, sc) in zip(cands, ppls, scored)]
        added, attempts = "", 0
        for attempt in range(cfg.attempts):
            attempts += 1
            reply = llm.chat(prompts.extend(paragraph, chosen), params(rnd * 10 + attempt)).text
            sentence = _carrying_sentence(reply, paragraph, chosen, vocab)
            if sentence:
                added = sentence
                break
        if added:
            paragraph = f"{paragraph.rstrip()} {added}"
            minimum.append(chosen)
        trace.append(
            RoundTrace(
                round=rnd,
                kind="extend",
                candidates=candidates,
                chosen=chosen,
                attempts=attempts,
                status="ok" if added else "skipped",
                paragraph=paragraph,
                note="" if added else f"no new sentence cited the chosen triple in {attempts} attempts",
            )
        )

    # Questions for the final paragraph, citations stripped.
    reference = strip_citations(paragraph)
    names = [record.person_a, record.person_b]
    general = clean_question(llm.chat(prompts.general_question(reference, names), params(100)).text)
    specific = clean_question(llm.chat(prompts.specific_question(reference, names, minimum), params(101)).text)
    trace.append(
        RoundTrace(
            round=cfg.rounds + 1,
            kind="questions",
            paragraph=reference,
            note=f"general: {general!r}; specific: {specific!r}",
            status="ok" if general and specific else "failed",
        )
    )
    return DatasetEntry(
        id=entry_id,
        general_question=general,
        specific_question=specific,
        seed=record,
        people=list(people),
        knowledge_pool=pool,
        minimum_set=minimum,
        reference=reference,
        trace=trace,
        meta={
            "seed": seed,
            "llm": llm.spec,
            "lm": scorer.spec,
            "alpha": cfg.alpha,
            "rounds": cfg.rounds,
            **({"llm_note": llm.label_note} if llm.label_note else {}),
        },
    )


def _carrying_sentence(reply: str, paragraph: str, fact: Triple, vocab: Vocabulary) -> str:
    """The first sentence of the reply (minus any repeat of the paragraph) that cites `fact`."""
    text = reply.strip()
    old = strip_citations(paragraph)
    if strip_citations(text).startswith(old[: max(20, len(old) // 2)]):
        text = text[len(paragraph) :] if text.startswith(paragraph) else text
    for s in parse_answer(text, vocab).sentences:
        if vocab.triple_key(fact) in {vocab.citation_key(c.qid, c.relation, c.value) for c in s.citations}:
            return re.sub(r"\s+", " ", s.text).strip()
    return ""
