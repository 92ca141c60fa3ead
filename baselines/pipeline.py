"""The baseline end to end: questions → NER → retrieval → rerank → prompt → LLM → answers.

`answer_dataset` writes one answer per (entry, seed, temperature), recording the KG that was
given, the model, the settings, the seed and the retrieval trace. A rerun skips the answers
already written, so a killed run resumes without losing or doubling rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from kalma.errors import BackendError
from kalma.kg import open_source
from kalma.languages import DEFAULT_LANGUAGE
from kalma.models import GenParams, get_llm
from kalma.models.openai_backend import reachable_first
from kalma.nlp import DEFAULT_SPACY
from kalma.progress import Progress
from kalma.provenance import provenance
from kalma.resume import ResumableOutput, fingerprint, value_digest
from kalma.schema import Answer, DatasetEntry, KnowledgeGraph, Setting, Triple, first_entries

from .ner import NER, said
from .prompt import PROMPT_VERSION, build_messages
from .retrieve import Retrieval, retrieval_report, retrieve


@dataclass
class BaselineConfig:
    llm: str = "template"
    kg: str = "demo"
    retrieval: Literal["ner", "gold"] = "ner"  # "gold": give the entry's own knowledge pool
    setting: Setting = "specific"
    seeds: Sequence[int] = (0,)
    temperatures: Sequence[float] = (0.5,)
    top_p: float = 1.0
    max_tokens: int = 256
    spacy_model: str = DEFAULT_SPACY
    limit: int | None = None  # the first N entries only (`--limit`)
    extra: dict[str, str] = field(default_factory=dict)
    language: str = "en"  # the dataset's: the prompt's and the KG's labels' (`--language`); NER reads it (`spacy_model`: its pipeline)


def run_retrieval(entries: Sequence[DatasetEntry], cfg: BaselineConfig) -> list[Retrieval]:
    source = open_source(cfg.kg, cfg.language)
    questions = [e.question(cfg.setting) for e in entries]
    return retrieve(questions, NER(source, cfg.spacy_model, language=cfg.language)(questions), source)


def answer_dataset(
    entries: Sequence[DatasetEntry],
    out: str | Path,
    cfg: BaselineConfig,
    progress: bool = True,
    given: Mapping[str, tuple[KnowledgeGraph, list[Triple] | None]] | None = None,
    overwrite: bool = False,
    desc: str | None = None,
) -> dict[str, object]:
    """Generate every missing answer into `out`; returns the retrieval report and counts.

    `given` overrides retrieval with an explicit (KG, absent set) per entry id, for ablations;
    otherwise the absent set is what the KG given lacks of the entry's minimum set
    (`DatasetEntry.absent_from`). It is stored with each answer for the [NA] metrics. An existing `out` is
    resumed only when it was made from the same dataset, KGs and settings (`kalma.resume`)."""
    entries, limited = first_entries(entries, cfg.limit)
    llm = get_llm(cfg.llm)
    try:
        reachable_first(llm)  # a server that is not there is said before spaCy, the KG and /models make it wait
    except BackendError as exc:
        raise BackendError(f"{exc}; no answer was written") from None
    traces: list[dict[str, object]] = [{} for _ in entries]
    if given is not None:
        kgs = [given[e.id][0] for e in entries]
        report: dict[str, object] = {"retrieval": "given by the caller (ablation)"}
    elif cfg.retrieval == "gold":
        kgs = [e.knowledge_pool for e in entries]
        report = {"retrieval": "gold knowledge pools"}
    else:
        rets = run_retrieval(entries, cfg)
        kgs = [r.kg for r in rets]
        report = dict(retrieval_report([r.kg.qids() for r in rets], [e.people for e in entries]))
        if cfg.language != DEFAULT_LANGUAGE:
            report["ner"] = said(cfg.spacy_model)
        traces = [{"mentions": [[m.text, m.label] for m in r.mentions], "candidates": r.candidates, "chosen": r.chosen} for r in rets]
    config = {
        "baseline": PROMPT_VERSION,
        "llm": cfg.llm,
        "kg": cfg.kg,
        "retrieval": cfg.retrieval,
        "setting": cfg.setting,
        "seeds": list(cfg.seeds),
        "temperatures": list(cfg.temperatures),
        "top_p": cfg.top_p,
        "max_tokens": cfg.max_tokens,
        "spacy_model": cfg.spacy_model,
        **({"limit": cfg.limit} if limited else {}),
        # an English run's fingerprint and header stay what they were; another language's say it and what read its questions
        **({"language": cfg.language, "ner": said(cfg.spacy_model)} if cfg.language != "en" else {}),
    }
    if llm.label_note:
        config["llm_note"] = llm.label_note
    given_digest = (
        value_digest(
            {k: (kg.model_dump(mode="json"), [t.model_dump(mode="json") for t in absent or []], absent is None) for k, (kg, absent) in sorted(given.items())}
        )
        if given is not None
        else None
    )
    # every file a spec names (a Turtle KG, a local model folder) counts by content: an edited KG is a new run
    run = fingerprint({"dataset": entries}, {**config, "llm_identity": llm.spec, "given": given_digest}, components={"kg": cfg.kg, "llm": cfg.llm})
    # a remote server: what its answers are cached by (provenance, not the fingerprint: it may change per start)
    served = {"llm_cache": llm.identity_note()} if hasattr(llm, "identity_note") else {}
    with ResumableOutput(
        out, "answers", Answer, Answer.answer_id, run, provenance(config=config, language=cfg.language, **served), overwrite=overwrite
    ) as output:
        done = set(output.done)
        jobs = [
            (e, kg, trace, seed, temp, f"{cfg.setting}-t{temp}-s{seed}")
            for seed in cfg.seeds
            for temp in cfg.temperatures
            for e, kg, trace in zip(entries, kgs, traces)
            if f"{e.id}#{cfg.setting}-t{temp}-s{seed}" not in done
        ]
        # counted at every answer: a batch arrives at once, and its first answer must not wait for the
        # next batch minutes later; the estimate waits for the model's first batch
        bar = Progress(len(jobs), f"answer: {desc or cfg.llm}", "answer", enabled=progress, settles=None)
        cut = 0  # answers the token limit ended: scored as they are, so the report says how many
        cached = 0  # answers the call cache served: a report says how many did not come from the model now
        # one call per (seed, temperature): the parameters are uniform within it; each answer is
        # written as it arrives, so a run killed midway keeps every answer the model gave
        written = 0
        try:
            with bar:  # closed before any error is printed, never glued to its line
                for key in dict.fromkeys((j[3], j[4]) for j in jobs):
                    group = [j for j in jobs if (j[3], j[4]) == key]
                    params = GenParams(temperature=key[1], top_p=cfg.top_p, max_tokens=cfg.max_tokens, seed=key[0])
                    for i, gen in llm.chat_stream([build_messages(e.question(cfg.setting), kg, cfg.language) for e, kg, *_ in group], params):
                        e, kg, trace, seed, temp, run_label = group[i]
                        cut += gen.finish_reason == "length"
                        cached += gen.cached
                        output.write(
                            Answer(
                                entry_id=e.id,
                                text=gen.text,
                                model=llm.spec,
                                setting=cfg.setting,
                                seed=seed,
                                kg=kg,
                                run=run_label,
                                absent=given[e.id][1] if given is not None else e.absent_from(kg),
                                settings={"temperature": temp, "top_p": cfg.top_p, "max_tokens": cfg.max_tokens, "prompt": PROMPT_VERSION, "kg_source": cfg.kg},
                                meta={
                                    "retrieval": trace,
                                    **({"note": llm.label_note} if llm.label_note else {}),
                                    "usage": {"prompt_tokens": gen.prompt_tokens, "completion_tokens": gen.completion_tokens, "cost_usd": gen.cost_usd},
                                    **({"finish_reason": gen.finish_reason} if gen.finish_reason else {}),
                                    **({"reasoning": gen.reasoning} if gen.reasoning else {}),
                                    **({"system_fingerprint": gen.system_fingerprint} if gen.system_fingerprint else {}),
                                    **({"cached": True} if gen.cached else {}),
                                },
                            )
                        )
                        bar.update()
                        written += 1
        except BackendError as exc:  # say what is kept: a rerun asks only for the rest
            kept = f"{written} of {len(jobs)} answers were written to {out}: run the same command again to resume" if written else "no answer was written"
            raise BackendError(f"{exc}; {kept}") from None
    return {
        **({"limited": limited} if limited else {}),
        **report,
        "written": len(jobs),
        "skipped_existing": len(done),
        "from_cache": cached,
        "cut_at_max_tokens": cut,
    }
