"""KaLMA as lm-evaluation-harness tasks: `lm_eval --tasks kalma --include_path $(kalma harness tasks)`.

The tasks (`tasks/`: `kalma_specific`, `kalma_general`, and the group `kalma`) ask a dataset's
questions in the baseline's own prompt with each entry's gold knowledge pool (§3's gold setting):
each document carries the prompt's `system` text (the instruction) and `user` text (the
demonstration, the knowledge, the question), which the task's `description` and `doc_to_text`
name. With `--apply_chat_template` the model reads exactly the messages `kalma answer` sends it.
Generation runs until the model stops or `max_gen_toks` (256, as `kalma answer`'s default).

The dataset: the bundled demo by default; `--metadata '{"dataset": PATH}'` names a KaLMA dataset
file (`kalma build`, `kalma dataset import-biokalma`) or the authors' release file
(`complex_question_graph.json`, read as `kalma` reads it).

Inside the harness only what needs no model is computed, by this suite's own code: citation
correctness, precision, recall and F1, micro (pooled over the whole set, as §4.1 computes them:
each document's counts from `CitationQuality.score`, summed by `CitationQuality.aggregate`).
Text-citation alignment, [NA] precision and recall (they need an entailment model and removed
knowledge), G-Eval and CONNER need models the harness does not run: give the samples file the
harness writes (`--log_samples`) to `kalma evaluate --answers`, which reads it as another
system's output (`kalma.answers_file`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from kalma.jsonl import dumps
from kalma.schema import Answer, DatasetEntry, Setting

TASKS_DIR = Path(__file__).parent / "tasks"
MIN_LM_EVAL = "0.4.5"  # `custom_dataset` and the chat-template prompt this relies on
MICRO = ("correctness_micro", "precision_micro", "recall_micro", "f1_micro")


def require_lm_eval() -> str:
    """The installed lm-eval's version, or one line saying what to install."""
    from importlib.metadata import PackageNotFoundError, version

    from packaging.version import Version

    from kalma.errors import ConfigError

    try:
        found = version("lm_eval")
    except PackageNotFoundError:
        raise ConfigError("the harness tasks need lm-evaluation-harness: pip install 'kalma-bench[harness]' (lm-eval)") from None
    if Version(found) < Version(MIN_LM_EVAL):
        raise ConfigError(f"lm-eval {found} is installed; the KaLMA tasks need {MIN_LM_EVAL} or later (custom datasets and chat-templated prompts)")
    return found


def dataset_entries(dataset: str = "demo") -> list[DatasetEntry]:
    """The entries the tasks ask: `demo`, a KaLMA dataset file, or the authors' release file."""
    if dataset == "demo":
        from dataset_builder.demo import demo_entries
        from kalma.kg import open_source

        return demo_entries(open_source("demo"))
    if dataset.endswith(".json"):
        from kalma.biokalma import release_entries

        return release_entries(dataset)
    from kalma.jsonl import read_jsonl

    return list(read_jsonl(dataset, DatasetEntry, kind="dataset"))


def documents(entries: list[DatasetEntry], setting: Setting, language: str = "en") -> list[dict[str, Any]]:
    """One document per entry that has a question in `setting`: its id, the prompt's two
    messages (in `language`, the dataset's), and the entry itself (as JSON, for scoring)."""
    from baselines.prompt import build_messages

    docs = []
    for e in entries:
        question = e.question(setting)
        if not question:
            continue
        system, user = build_messages(question, e.knowledge_pool, language)
        docs.append(
            {
                "id": e.id,
                "setting": setting,
                **({"language": language} if language != "en" else {}),
                "system": system["content"],
                "user": user["content"],
                "entry": e.model_dump_json(),
            }
        )
    return docs


def load(setting: Setting, dataset: str = "demo", language: str | None = None, **_: Any) -> Any:
    """The task's dataset, as lm-eval's `custom_dataset` hook returns it (other metadata ignored);
    `language` (`--metadata '{"language": "fr"}'`) must agree with the dataset's header, whose language is the default."""
    import datasets

    from kalma.languages import dataset_language

    lang = dataset_language(dataset, language, "metadata language") if dataset != "demo" else "en"
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(documents(dataset_entries(dataset), setting, lang))})


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, dict[str, int]]:
    """One document's citation counts, by the suite's own metric: the generation read as an
    answer to the document's entry, in its setting, with the entry's pool as the KG given."""
    from evaluation.base import EvalItem, EvalOptions
    from evaluation.citation_quality import CitationQuality

    entry = DatasetEntry.model_validate_json(doc["entry"])
    answer = Answer(entry_id=entry.id, text=results[0], setting=doc["setting"])
    counts = CitationQuality(EvalOptions()).score([EvalItem.build(answer, entry)])[0].counts
    return dict.fromkeys(MICRO, counts)


def aggregate(key: str, items: list[dict[str, int]]) -> float:
    """A micro figure over every document's counts, by `CitationQuality.aggregate`; NaN where it
    has no denominator (no citation, or no minimum set)."""
    from evaluation.base import EvalOptions, Scored
    from evaluation.citation_quality import CitationQuality

    value = CitationQuality(EvalOptions()).aggregate([Scored(counts=c) for c in items])[0][key]
    return math.nan if value is None else float(value)


def write_tasks(dataset: str, out: Path) -> Path:
    """The task folder, with `dataset` as every task's default (an absolute path, so that the
    folder works from anywhere)."""
    import shutil

    out.mkdir(parents=True, exist_ok=True)
    where = dataset if dataset == "demo" else str(Path(dataset).resolve())
    for f in TASKS_DIR.iterdir():
        if f.suffix == ".yaml":
            text = f.read_text().replace("dataset: demo", f"dataset: {dumps(where)}")
            (out / f.name).write_text(text)
        elif f.suffix == ".py":
            shutil.copy(f, out / f.name)
    return out
