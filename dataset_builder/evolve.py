"""Evolutionary question generation (paper §2.2, Appendix A.3) for one resolved pair.

Round 1 has the LLM annotate the seed paragraph with pool triples, keeping only annotations
that exist in the pool. Rounds 2..R each select one unused triple by the selection score, and
have the LLM add one sentence that cites it; a sentence that does not carry the triple is
retried, then the round is skipped, and either way the round is recorded. Finally the LLM
writes a general and a specific question for the final paragraph with citations stripped.

The minimum knowledge set is every triple validated along the way, under one rule for every
round: no trivial relation (the subject's class says which: `kalma.classes`), one triple per fact (`pool.Facts`: never a triple
and its inverse). An entry with an empty minimum set, an empty question, or two questions of
the same text is not written: `evolve` returns why (`BUILD_FAILURES`). Every LLM call (prompt,
reply, backend, seed, round) is kept for the build's trace file.

An entry's evolution is a generator (`evolution`) that yields each round's perplexity request
and is sent the scores back, so that `interleave` can run many entries' rounds in one scorer
call: entries evolve independently, and a call of a thousand candidates from thirty paragraphs
costs the scorer far less than thirty calls (one model pass per shared paragraph, one plan, one
cache look-up). Outcomes come back in the order the entries went in.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from kalma.biokalma import strip_question_prefix
from kalma.citations import parse_answer, strip_citations
from kalma.classes import HUMAN, EntityClass
from kalma.models import LLM, Generation, GenParams, LMScorer
from kalma.models.base import Message
from kalma.properties import Vocabulary
from kalma.schema import BuildTrace, Candidate, DatasetEntry, KnowledgeGraph, LLMCall, RoundTrace, SeedRecord, Triple, normalize_text, same_question
from kalma.seeds import derive_seed

from . import prompts
from .pool import Facts
from .selection import selection_scores, template_sentence

BUILD_FAILURES = ("empty minimum set", "empty general question", "empty specific question", "same questions")


@dataclass
class EvolveConfig:
    rounds: int = 5
    alpha: float = 0.5
    attempts: int = 2
    temperature: float = 0.7
    max_tokens: int = 160


@dataclass
class CallLog:
    """The LLM, with every call kept as sent and answered."""

    llm: LLM
    seed: int
    cfg: EvolveConfig
    calls: list[LLMCall] = field(default_factory=list)

    def chat(self, messages: list[Message], step: str, rnd: int, attempt: int = 0) -> Generation:
        params = GenParams(temperature=self.cfg.temperature, max_tokens=self.cfg.max_tokens, seed=derive_seed(self.seed, step, rnd, attempt))
        g = self.llm.chat(messages, params)
        self.calls.append(
            LLMCall(
                step=step,
                round=rnd,
                attempt=attempt,
                backend=self.llm.spec,
                seed=params.seed,
                temperature=params.temperature,
                max_tokens=params.max_tokens,
                messages=messages,
                reply=g.text,
                reasoning=g.reasoning,
                finish_reason=g.finish_reason,
            )
        )
        return g


@dataclass
class Outcome:
    """An entry (None when it failed) and the trace of how it was built."""

    entry: DatasetEntry | None
    trace: BuildTrace


def clean_question(text: str) -> str:
    """First line, without a `question:` prefix or quotes (the authors' release kept 978)."""
    line = next((x for x in text.strip().splitlines() if x.strip()), "")
    return strip_question_prefix(line).strip().strip('"“”').strip()


def cited_keys(text: str, vocab: Vocabulary) -> list[tuple[str, str, str]]:
    """The facts `text` cites, by property identity (an LLM may name a property by an alias)."""
    return [vocab.citation_key(c.qid, c.relation, c.value) for c in parse_answer(text, vocab).citations]


def failures(minimum: list[Triple], general: str, specific: str) -> list[str]:
    """Why an entry with these parts may not be written (empty when it may)."""
    found = [] if minimum else ["empty minimum set"]
    found += [f"empty {kind} question" for kind, q in (("general", general), ("specific", specific)) if not normalize_text(q)]
    if normalize_text(general) and normalize_text(specific) and same_question(general, specific):
        found.append("same questions")
    return found


@dataclass
class Perplexities:
    """What an evolving entry waits for: the perplexity of each text after its context."""

    texts: list[str]
    contexts: list[str]


Evolution = Generator[Perplexities, list[float], Outcome]


def interleave(entries: Iterable[Evolution], scorer: LMScorer, window: int, step: Callable[[int, int, int], None] | None = None) -> Iterator[Outcome]:
    """Evolve up to `window` entries at once, every request they wait on in one scorer call, and
    yield their outcomes in the order the entries came (an entry done early waits for those before
    it, inside the window: at most `window` entries are held). `step(calls, entries, texts)` hears
    of each scorer call before it is made: the progress inside the entries' rounds."""
    source = iter(entries)
    waiting: dict[int, tuple[Evolution, Perplexities]] = {}
    finished: dict[int, Outcome] = {}
    taken = given = calls = 0
    more = True

    def advance(i: int, gen: Evolution, scores: list[float] | None) -> None:
        try:
            waiting[i] = (gen, next(gen) if scores is None else gen.send(scores))
        except StopIteration as stop:
            waiting.pop(i, None)
            finished[i] = stop.value

    while True:
        while more and len(waiting) + len(finished) < max(1, window):
            gen = next(source, None)
            more = gen is not None
            if gen is not None:
                advance(taken, gen, None)
                taken += 1
        while given in finished:
            yield finished.pop(given)
            given += 1
        if not waiting:
            if not more:
                return
            continue
        asked = list(waiting.items())
        calls += 1
        if step is not None:
            step(calls, len(asked), sum(len(r.texts) for _, (_, r) in asked))
        scores = scorer.perplexity([t for _, (_, r) in asked for t in r.texts], [c for _, (_, r) in asked for c in r.contexts])
        at = 0
        for i, (gen, r) in asked:
            advance(i, gen, scores[at : at + len(r.texts)])
            at += len(r.texts)


def evolution(
    entry_id: str,
    record: SeedRecord,
    people: tuple[str, str],
    pool: KnowledgeGraph,
    llm: LLM,
    counts: Counter[str],
    n: int,
    cfg: EvolveConfig,
    seed: int,
    inverses: Mapping[str, frozenset[str]],
    lm: str,
    classes: tuple[EntityClass, EntityClass] = (HUMAN, HUMAN),
    language: str = "en",
) -> Evolution:
    """The entry's rounds; yields each perplexity request and is sent its scores (`interleave`).
    `lm` is the scorer's spec, which the entry records; `classes` are the two entities' classes:
    what is trivial about each, the sentences that state their facts, how questions name them."""
    of = dict(zip(people, classes))

    def is_trivial(t: Triple) -> bool:
        return of.get(t.subject, classes[0]).is_trivial(t)

    def stated(t: Triple) -> str:
        return template_sentence(t, language=language, cls=of.get(t.subject, classes[0]).qid)

    vocab = Vocabulary.of(pool)
    index = {vocab.triple_key(t): t for t in pool.triples()}
    log = CallLog(llm, seed, cfg)
    facts = Facts(inverses, vocab)
    trace: list[RoundTrace] = []

    # Round 1: annotate the seed paragraph; keep what the pool holds, under the minimum set's rules.
    out = log.chat(prompts.annotate(record.paragraph, pool, language), "annotate", 1).text
    same_text = difflib.SequenceMatcher(None, strip_citations(out, language).lower(), record.paragraph.lower()).ratio() >= 0.8
    left_out: Counter[str] = Counter()
    for k in dict.fromkeys(cited_keys(out, vocab)) if same_text else ():
        t = index.get(k)
        if t is None:
            continue
        if is_trivial(t):
            left_out["trivial relation"] += 1
        elif not facts.add(t):
            left_out["the inverse of a kept triple"] += 1
    paragraph = out if same_text else record.paragraph
    note = "" if same_text else "the annotated text no longer matched the seed paragraph; annotations dropped"
    if left_out:
        note = "left out: " + ", ".join(f"{n} {why}" for why, n in left_out.items())
    trace.append(RoundTrace(round=1, kind="annotate", kept=list(facts.triples), paragraph=paragraph, status="ok" if same_text else "failed", note=note))
    tried = {vocab.triple_key(t) for t in facts.triples}

    # Rounds 2..R: select one triple, extend by one sentence that cites it.
    for rnd in range(2, cfg.rounds + 1):
        cands = [t for t in pool.triples() if vocab.triple_key(t) not in tried and not is_trivial(t) and t not in facts]
        if not cands:
            trace.append(RoundTrace(round=rnd, kind="extend", status="skipped", note="no unused non-trivial triple left"))
            break
        context = strip_citations(paragraph, language)
        ppls = yield Perplexities([stated(t) for t in cands], [context] * len(cands))
        scored = selection_scores([t.relation_label for t in cands], ppls, counts, n, cfg.alpha)
        best = max(range(len(cands)), key=lambda i: (scored[i][2], -i))
        chosen = cands[best]
        tried.add(vocab.triple_key(chosen))
        candidates = [Candidate(triple=t, specificity=s, coherence=c, perplexity=p, score=sc) for t, p, (s, c, sc) in zip(cands, ppls, scored)]
        added, attempts = "", 0
        for attempt in range(cfg.attempts):
            attempts += 1
            reply = log.chat(prompts.extend(paragraph, chosen, language), "extend", rnd, attempt).text
            sentence = _carrying_sentence(reply, paragraph, chosen, vocab, language)
            if sentence:
                added = sentence
                break
        if added:
            paragraph = f"{paragraph.rstrip()} {added}"
            facts.add(chosen)
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
    reference = strip_citations(paragraph, language)
    names = [record.person_a, record.person_b]
    nouns = None if all(c.person for c in classes) else [c.noun_in(language) for c in classes]  # people keep the paper's prompts
    minimum = list(facts.triples)
    general = clean_question(log.chat(prompts.general_question(reference, names, nouns, language), "general-question", cfg.rounds + 1).text)
    specific = clean_question(log.chat(prompts.specific_question(reference, names, minimum, nouns, language), "specific-question", cfg.rounds + 1).text)
    failed = failures(minimum, general, specific)
    trace.append(
        RoundTrace(
            round=cfg.rounds + 1,
            kind="questions",
            paragraph=reference,
            note=f"general: {general!r}; specific: {specific!r}",
            status="failed" if failed else "ok",
        )
    )
    built = BuildTrace(
        entry_id=entry_id,
        status="failed" if failed else "written",
        failures=failed,
        source=record.source,
        source_line=record.source_line,
        seed=seed,
        calls=log.calls,
    )
    if failed:
        return Outcome(None, built)
    entry = DatasetEntry(
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
            "lm": lm,
            "alpha": cfg.alpha,
            "rounds": cfg.rounds,
            **({"llm_note": llm.label_note} if llm.label_note else {}),
            **({"classes": [c.qid for c in classes]} if nouns else {}),
        },
    )
    return Outcome(entry, built)


def _carrying_sentence(reply: str, paragraph: str, fact: Triple, vocab: Vocabulary, language: str) -> str:
    """The first sentence of the reply (minus any repeat of the paragraph) that cites `fact`, by the language's sentence rules."""
    text = reply.strip()
    old = strip_citations(paragraph, language)
    if strip_citations(text, language).startswith(old[: max(20, len(old) // 2)]):
        text = text[len(paragraph) :] if text.startswith(paragraph) else text
    for s in parse_answer(text, vocab, language).sentences:
        if vocab.triple_key(fact) in {vocab.citation_key(c.qid, c.relation, c.value) for c in s.citations}:
            return re.sub(r"\s+", " ", s.text).strip()
    return ""
