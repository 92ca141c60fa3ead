"""KaLMA as an Inspect task: `inspect eval kalma/kalma_specific --model M` (`pip install 'kalma-bench[inspect]'`).

One sample per dataset entry that has a question in the task's setting. Its input is exactly what
`kalma answer` sends the model (`baselines.prompt.build_messages`: the instruction as the system
message; the demonstration, the knowledge as flat text and the question as the user message),
with the knowledge of the task's condition, the same ones `kalma bench run` composes:
- `retrieval="gold"`: each entry's own knowledge pool; `retrieval="ner"`: the baseline's
  retrieval (spaCy NER, KG look-up, rerank) over `kg`;
- `removed=k`: k triples of each entry's minimum set taken out of its gold pool, in the seeded
  order of the knowledge-removal experiment (`kalma.removal.remove_knowledge`).
The sample's metadata holds the entry id (Inspect's cluster), the setting, the KG given and what
it lacks of the minimum set (the [NA] metrics' absent set), so that its log is an answers file
(`kalma evaluate --answers LOG.eval`) with nothing left to guess.

The scorer is the evaluator's (`evaluation.inspect_scorer`). Without a model for them, the
model-based figures are not computed here, and the log says so (`eval.metadata.kalma`): give
`-T nli=SPEC` (alignment, [NA]) or `-T judge=SPEC` (G-Eval), or score the log with `kalma evaluate`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, GenerateConfig
from inspect_ai.solver import generate

from baselines.prompt import PROMPT_VERSION, build_messages
from evaluation.base import DEFAULT_METRICS, METRICS, EvalOptions, approximate_entailment
from evaluation.inspect_scorer import CLUSTER, entries_of, scorer_for
from kalma.errors import ConfigError
from kalma.nlp import DEFAULT_SPACY
from kalma.removal import remove_knowledge
from kalma.schema import DatasetEntry, KnowledgeGraph, Setting, Triple

TASKS = ("kalma/kalma", "kalma/kalma_specific", "kalma/kalma_general")  # the registered names (bench.inspect_registry)
MAX_TOKENS = 256  # as `kalma answer`'s default; `inspect eval --max-tokens N` changes it
NEEDS = {"nli": "an entailment model: -T nli=SPEC (lexical, hf-nli:ID, llm:SPEC)", "judge": "a judge: -T judge=SPEC", "lm": "an LM scorer: -T lm=SPEC"}


def chosen_metrics(metrics: str | Sequence[str] | None, options: EvalOptions, given: dict[str, str | None]) -> tuple[list[str], list[str]]:
    """The evaluator's metrics scored in Inspect, and those left to `kalma evaluate`: by default
    citation quality, plus alignment and [NA] with `nli`, and G-Eval with `judge`; a metric named
    in `metrics` whose model is not given is refused."""
    if metrics is None:
        names = ["citation", *(["alignment", "na"] if given["nli"] else []), *(["geval"] if given["judge"] else [])]
    else:
        names = [m.strip() for m in (metrics.split(",") if isinstance(metrics, str) else metrics) if m.strip()]
    for name in names:
        METRICS.check(name)
        for need in getattr(METRICS.factory(name), "needs", ()):
            if not given.get(need):
                raise ConfigError(f"-T metrics: {name} needs {NEEDS[need]}; or leave it to `kalma evaluate --answers LOG`")
    left = [m for m in (*DEFAULT_METRICS, "geval") if m not in names]
    return names, left


def conditions(
    entries: Sequence[DatasetEntry], setting: Setting, retrieval: str, removed: int, seed: int, kg: str, spacy: str
) -> dict[str, tuple[KnowledgeGraph, list[Triple] | None, dict[str, Any]]]:
    """What each entry is given: its KG, the absent set, and how it was made."""
    if removed and retrieval != "gold":
        raise ConfigError(f"-T removed={removed}: knowledge removal takes triples out of the gold pools; use it with -T retrieval=gold")
    if removed:
        return {i: (c.kg, c.absent, {"removal": c.note} if c.note else {}) for i, c in remove_knowledge(entries, removed, seed).items()}
    if retrieval == "gold":
        return {e.id: (e.knowledge_pool, e.absent_from(e.knowledge_pool), {}) for e in entries}
    from baselines.pipeline import BaselineConfig, run_retrieval

    found = run_retrieval(entries, BaselineConfig(kg=kg, setting=setting, spacy_model=spacy))
    traces = [{"retrieval": {"mentions": [[m.text, m.label] for m in r.mentions], "chosen": r.chosen}} for r in found]
    return {e.id: (r.kg, e.absent_from(r.kg), trace) for e, r, trace in zip(entries, found, traces)}


def kalma_task(
    setting: Setting = "specific",
    dataset: str = "demo",
    retrieval: Literal["gold", "ner"] = "gold",
    removed: int = 0,
    seed: int = 0,
    kg: str | None = None,
    spacy: str = DEFAULT_SPACY,
    metrics: str | Sequence[str] | None = None,
    nli: str | None = None,
    judge: str | None = None,
    lm: str | None = None,
    compat: str = "default",
    language: str | None = None,
) -> Task:
    """The task behind `kalma/kalma_specific`, `kalma/kalma_general` and `kalma/kalma` (see the module docstring);
    `-T language=fr` must agree with the dataset's header (by default its language is taken)."""
    from pathlib import Path

    from baselines.cli import dataset_kg
    from kalma.languages import dataset_language

    if setting not in ("specific", "general"):
        raise ConfigError(f"-T setting={setting}: one of specific, general")
    if retrieval not in ("gold", "ner"):
        raise ConfigError(f"-T retrieval={retrieval}: one of gold (each entry's knowledge pool), ner (the baseline's retrieval)")
    where = dataset if dataset == "demo" else str(Path(dataset).resolve())  # Inspect may run the task from another folder
    if where != "demo" and not Path(where).is_file():
        raise ConfigError(f"-T dataset={dataset}: no such file ({where}); give a KaLMA dataset file, or leave it out for the demo")
    source = kg or ("demo" if dataset == "demo" or dataset.endswith(".json") else dataset_kg(where, None, retrieving=False)[0])
    options = EvalOptions(compat=compat, nli=nli or "lexical", judge=judge, lm=lm, seed=seed)
    names, left = chosen_metrics(metrics, options, {"nli": nli, "judge": judge, "lm": lm})
    lang = dataset_language(where, language, "-T language") if where != "demo" else "en"
    asked = [e for e in entries_of(where).values() if e.question(setting)]
    given = conditions(asked, setting, retrieval, int(removed), int(seed), source, spacy)
    samples = []
    for e in asked:
        kg_given, absent, how = given[e.id]
        system, user = build_messages(e.question(setting), kg_given, lang)
        metadata = {
            CLUSTER: e.id,
            "setting": setting,
            "kg": kg_given.model_dump(mode="json"),
            "absent": None if absent is None else [t.model_dump(mode="json") for t in absent],
            **how,
        }
        samples.append(Sample(id=e.id, input=[ChatMessageSystem(content=system["content"]), ChatMessageUser(content=user["content"])], metadata=metadata))
    scorer, inspect_metrics = scorer_for(where, names, options)
    entailing = nli and any("nli" in getattr(METRICS.factory(n), "needs", ()) for n in names)
    caveats = approximate_entailment(options.nli) if entailing else []  # the lexical stand-in named as such
    said = {
        "prompt": PROMPT_VERSION,
        "dataset": where,
        "setting": setting,
        "language": lang,
        "retrieval": "gold knowledge pools" if retrieval == "gold" else f"the baseline's retrieval (spaCy {spacy}) over {source}",
        "removed": int(removed),
        "seed": int(seed),
        "metrics": names,
        "options": {"nli": nli, "judge": judge, "lm": lm, "compat": compat},
        "left_to_kalma_evaluate": (
            f"{', '.join(left)}: not computed here (they need a model the task was not given); run `kalma evaluate --dataset DATASET --answers LOG`"
            if left
            else ""
        ),
        "caveats": caveats,
    }
    return Task(
        dataset=MemoryDataset(samples, name=f"kalma-{Path(where).stem}-{setting}", location=where),
        solver=generate(),
        scorer=scorer,
        metrics=inspect_metrics,
        config=GenerateConfig(max_tokens=MAX_TOKENS),
        metadata={"kalma": said},
    )
