"""One evaluation run: answers + dataset → per-answer scores, a summary and a markdown table.

    from evaluation.runner import evaluate
    summary = evaluate("dataset.jsonl", "answers.jsonl", "runs/eval", metrics=["citation", "alignment"])

The per-answer file is written row by row (fsynced). A killed run resumes from it: answers
already scored are skipped, and the summary is always computed from the stored rows, so a
resumed run reports exactly what an uninterrupted one would.
"""

from __future__ import annotations

import re
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from kalma.answers_file import AnswersFile, Problem, load_answers, said
from kalma.errors import ConfigError, Interrupted, KalmaError
from kalma.jsonl import read_header, read_jsonl
from kalma.kg.version import dataset_kg_version, describe
from kalma.languages import DEFAULT_LANGUAGE, check_tag, file_language, get_language
from kalma.languages.text import written
from kalma.progress import Progress
from kalma.provenance import provenance
from kalma.resume import ResumableOutput, fingerprint, records_digest, value_digest
from kalma.schema import Answer, AnswerScores, Bounds, Coverage, DatasetEntry, KnowledgeGraph, Resampling, Spread, Summary, first_entries

from .base import DEFAULT_METRICS, MALFORMED_REASONS, MARKUP_TOTALS, SCALES, UNUSABLE_LIMIT, EvalItem, EvalOptions, Metric, Scored, get_metric, show
from .identity import identities
from .identity import lines as judge_lines
from .text_quality import self_judged
from .uncertainty import LEVEL, RESAMPLES, PerAnswer, intervals, per_answer, run_of, spread
from .verdict_page import language_line, render_page
from .verdicts import assemble

SCORES_FILE, SUMMARY_FILE, TABLE_FILE, PAGE_FILE = "scores.jsonl", "summary.json", "summary.md", "verdicts.html"
FULL_POOL = "scored as given the dataset's full knowledge pool"  # said of answers that do not say which knowledge they had
DOMINANT_SHARE = 0.25  # of all citations: an answer holding more is named before any figure
UNFINISHED = "UNFINISHED: this evaluation stopped before every answer was scored; its figures describe no complete run. Rerun it to resume."
MISSING_NOTE = "no answer for this entry: scored as empty"
MISSING = "missing"  # an entry's knowledge digest when it has no answer


def fill_missing(answers: list[Answer], entries: dict[str, DatasetEntry]) -> tuple[list[Answer], int]:
    """Every entry gets an answer in every run: a missing one is scored as an empty answer."""
    model = answers[0].model if answers else "none"
    filled = list(answers) + [
        Answer(entry_id=eid, text="", model=model, run=run, meta={"missing": True})
        for run, ids in AnswersFile(list(answers)).missing(list(entries)).items()
        for eid in ids
    ]
    return filled, len(filled) - len(answers)


def evaluate(
    dataset: str | Path | Sequence[DatasetEntry],
    answers: str | Path | Sequence[Answer],
    out_dir: str | Path,
    metrics: Iterable[str] = DEFAULT_METRICS,
    options: EvalOptions | None = None,
    kg_source: str | None = None,
    chunk_size: int = 64,
    progress: bool = True,
    stop_after: int | None = None,
    overwrite: bool = False,
    desc: str | None = None,
    limit: int | None = None,
    model: str | None = None,
    named: str | None = None,
    partial: bool = False,
    resamples: int = RESAMPLES,
) -> Summary:
    """Score `answers` against `dataset` into `out_dir` (see the module docstring).

    `limit` scores the answers to the first `limit` entries only, and `partial` only the entries
    the answers answer (a partial submission, instead of scoring the others as empty answers);
    both say so in every report and record it in the summary's `coverage`.
    `model` names the model of answers whose lines and header name none (`--model`); `named` is
    what the reports call the answers' model (a submission's model: one name everywhere).
    Every figure gets a bootstrap interval over dataset entries from `resamples` resamples drawn
    with the run's seed (0: none).
    `stop_after` scores at most that many new answers, then returns (used to test resumption).
    An existing output made from other inputs or settings is refused (`kalma.resume`), or
    started over with `overwrite`.
    """
    options = options or EvalOptions()
    out = Path(out_dir)  # made by the scores file's writer: a run that fails before it leaves no folder
    entry_list = list(read_jsonl(dataset, DatasetEntry, kind="dataset")) if isinstance(dataset, (str, Path)) else list(dataset)
    dataset_header = read_header(dataset, "dataset") if isinstance(dataset, (str, Path)) else {}
    # the dataset says its language (one without it is English); records in memory, the options
    language = get_language(file_language(dataset_header), f"{dataset}:1: field 'language'").code if isinstance(dataset, (str, Path)) else options.language
    options = in_language(options, language)
    entries = {e.id: e for e in entry_list}
    problems: list[Problem] = []
    unnamed: list[str] = []
    kg_given: str | None = None
    made_by: dict[str, Any] = {}  # what the answers file says made it (`kalma answer`'s settings, the harness's run)
    if isinstance(answers, (str, Path)):
        loaded = load_answers(answers, entries, model or named)
        answer_list, problems = loaded.answers, loaded.problems
        # answers whose header says their language were asked in it: text of another language is
        # not scored by this dataset's rules, `--lenient` or not (one without a language: as given)
        asked_in = (loaded.header.get("provenance") or {}).get("language") if isinstance(loaded.header.get("provenance"), dict) else None
        if isinstance(asked_in, str) and check_tag(asked_in, f"{answers}:1: field 'language'") != language and isinstance(dataset, (str, Path)):
            raise KalmaError(
                f"{answers} is in {asked_in} (its header's language), {dataset} in {language}: "
                f"answer the dataset in its own language (kalma answer --dataset {dataset}), or evaluate these answers on the dataset they were asked from"
            )
        if not answer_list:  # nothing to score: never a report of empty answers, whatever --lenient says
            if other := other_dataset(loaded.header, dataset, entry_list):
                raise KalmaError(f"{answers} was made on another dataset, {other[0]}, not on {other[1]}: none of its answers is to one of these entries")
            found = f" ({said(loaded.counts())}; `kalma check {answers} --kind answers --lenient` lists them)" if problems else ""
            raise KalmaError(f"{answers}: no answer could be read{found}; nothing was scored")
        unnamed = [c for c in (loaded.matched, loaded.model_caveat()) if c]
        kg_given = header_kg_given(answers, loaded.header)
        partial = partial or loaded.asked is not None  # the harness asked these entries only (`lm_eval --limit`)
        made_by = loaded.made_by()
    else:
        answer_list = list(answers)
    entry_list, unasked = general_only(entry_list, answer_list)
    entries = {e.id: e for e in entry_list}
    n_entries, entries_all = len(entry_list), entry_list
    entry_list, limited = first_entries(entry_list, limit)
    if partial:
        answered = {a.entry_id for a in answer_list}
        entry_list = [e for e in entry_list if e.id in answered]
        if len(entry_list) < n_entries:
            limited = f"PARTIAL: answers for {len(entry_list)} of {n_entries} dataset entries, scored on those only; not comparable with a full run"
    coverage = Coverage(scored=len(entry_list), entries=n_entries, how="partial" if partial else "limit") if limited else None
    scope: dict[str, Any] = {"partial": True} if partial else {"limit": limit} if limited else {}  # part of the run's identity
    if limited:
        entries = {e.id: e for e in entry_list}
        answer_list = [a for a in answer_list if a.entry_id in entries]
    answer_list, n_missing = fill_missing(answer_list, entries)
    if kg_source:
        answer_list = _attach_kg(answer_list, entries, kg_source)
    answer_list, assumed = knowledge_given(answer_list, entries, kg_given)
    said_first = ([limited] if limited else []) + unasked + unnamed + missing_caveat(answer_list, len(entry_list))

    names = list(dict.fromkeys(metrics))
    active: list[Metric] = [get_metric(n, options) for n in names]
    given: dict[str, str] = {}
    for m, spec in zip(active, names):  # one namespace per metric: two option sets of one metric are two runs
        if m.name in given:
            raise ConfigError(f"metric {m.name!r} is given twice ({given[m.name]!r} and {spec!r}); evaluate each into its own output")
        given[m.name] = spec
    unavailable = {m.name: need for m in active for need in m.needs if need in {"judge", "lm"} and not getattr(options, need)}
    for m in active:
        m.prepare(entry_list)
    dataset_made = dataset_header.get("provenance")
    dataset_made = dataset_made if isinstance(dataset_made, dict) else {}
    config = {
        "metrics": names,
        "options": asdict(options),
        "kg_source": kg_source,
        **scope,
        # absolute: `kalma compare` and `judge sensitivity` read them again, from any folder
        "dataset": str(Path(dataset).resolve()) if isinstance(dataset, (str, Path)) else "<in memory>",
        "answers": str(Path(answers).resolve()) if isinstance(answers, (str, Path)) else "<in memory>",
        **({"answers_made_by": made_by} if made_by else {}),
        "dataset_digest": dataset_digest(entries_all),  # `kalma compare` pairs only the same questions
        # the KG its questions and knowledge hold true for: a figure names the KG version behind it
        "dataset_kg": dataset_kg_version(dataset_header),
        **({"changed_since": dataset_made["changed_since"]} if "changed_since" in dataset_made else {}),
        "settings": sorted({a.setting for a in answer_list if not a.meta.get("missing")}),  # general, specific: ranked apart
    }
    models = {k: v for m in active for k, v in m.models().items()}  # builds every backend: a missing model fails here
    limits = dataset_limits(entry_list, answer_list, [m.name for m in active])
    if progress:  # said once, before any scoring
        for line in ([limited] if limited else []) + limits:
            tqdm.write(f"note: {line}", file=sys.stderr)
    answer_models = sorted({a.model for a in answer_list if not a.meta.get("missing")})
    if named and answer_models != [named]:
        answer_models = [f"{named} (the answers say {', '.join(answer_models) or 'nothing'})" if answer_models else named]

    run = fingerprint(
        {"dataset": dataset if isinstance(dataset, (str, Path)) else entry_list, "answers": answers if isinstance(answers, (str, Path)) else answer_list},
        {"metrics": names, "options": asdict(options), "kg_source": kg_source, **scope},
        components={"nli": options.nli, "judge": options.judge, "lm": options.lm, "kg": kg_source},  # files they name, by content
    )
    with ResumableOutput(
        out / SCORES_FILE,
        "scores",
        AnswerScores,
        lambda r: r.answer_id,
        run,
        provenance(config=config, models=models, answer_models=answer_models, knowledge=knowledge_digests(answer_list, entries), to_score=len(answer_list)),
        overwrite=overwrite,
    ) as output:
        _mark_unfinished(out, len(answer_list), answer_models, options.language)  # before the first row: the folder never describes another run
        done = {r.answer_id: r for r in output.existing}
        problems += [Problem("corrupt_line", f"resume: {e}") for e in output.errors]
        todo = [a for a in answer_list if a.answer_id() not in done]
        if stop_after is not None:
            todo = todo[:stop_after]
        # answers are counted a chunk at a time: meanwhile the models' batches say how far their calls are
        bar = Progress(len(todo), f"evaluate: {desc}" if desc else "evaluate", "answer", enabled=progress, inner=True)
        try:
            with bar:
                _score_all(todo, chunk_size, entries, active, unavailable, output, done, bar)
        except KeyboardInterrupt:
            kept = f"{len(done)} of {len(answer_list)} answers are scored in {out / SCORES_FILE}" if done else "no answer was scored yet"
            raise Interrupted(f"interrupted: {kept}; run the same command again to resume") from None

        wanted = [a.answer_id() for a in answer_list]
        rows = [done[k] for k in wanted if k in done]
        notices = [a.meta["note"] for a in answer_list if isinstance(a.meta.get("note"), str)]
        from_cache = sum(bool(a.meta.get("cached")) for a in answer_list)
        first = said_first + answer_caveats(answer_list, rows, answer_models) + assumed
        if any(m.name == "geval" for m in active) and (own := self_judged(options.judge, answer_models)):
            first.append(own)
        complete = len(rows) == len(wanted)
        summary = summarize(rows, active, config, models, answer_models, problems, n_missing, limits, notices, complete, from_cache, first)
        conditions = run_conditions(answer_list)
        summary.intervals, summary.resampling, summary.run_spread = uncertainty(rows, active, summary.metrics, resamples, options.seed, conditions)
        if len(asked := sorted(set(conditions.values()))) > 1:
            summary.caveats.append(
                f"The answers come from {len(asked)} conditions ({'; '.join(asked)}): every figure and its interval pools them; "
                "the spread over seeds is given per condition."
            )
        summary.splits = split_figures(rows, active, entries, resamples, options.seed)
        summary.coverage, summary.to_score, summary.language = coverage, len(wanted), options.language
        summary.caveats += language_caveat(options.language)
        summary.judges = identities({n for m in active for n in m.needs}, options.nli, options.threshold, options.judge, options.language)
        (out / SUMMARY_FILE).write_text(summary.model_dump_json(indent=2))
        (out / TABLE_FILE).write_text(markdown_table(summary))
        questions = {a.answer_id(): e.question(a.setting) for a in answer_list if (e := entries.get(a.entry_id))}
        (out / PAGE_FILE).write_text(render_page(summary, rows, questions), encoding="utf-8")
    return summary


def dataset_digest(entries: Sequence[DatasetEntry]) -> str:
    """Which questions: the entries themselves in id order, whatever file or header holds them."""
    ordered: list[DatasetEntry] = sorted(entries, key=lambda e: e.id)
    return records_digest(ordered)


def knowledge_digests(answers: Sequence[Answer], entries: dict[str, DatasetEntry]) -> dict[str, str]:
    """Per entry, a short digest of the question its answers answer (general or specific), what
    they were given to cite from and what was absent from it: `kalma compare` pairs an entry of
    two evaluations only under the same, and an entry without an answer (MISSING) with any. A KG given
    that is the entry's whole pool reads as the pool however it was said (omitted, or written out
    by `kalma answer`), and nothing absent as nothing (omitted, or an empty list)."""
    pools: dict[str, str] = {}

    def pool(entry_id: str) -> str:
        if entry_id not in pools:
            e = entries.get(entry_id)
            pools[entry_id] = value_digest(e.knowledge_pool.model_dump(mode="json")) if e is not None else ""
        return pools[entry_id]

    given: dict[str, set[str]] = {}
    for a in answers:
        if a.meta.get("missing"):  # no answer: nothing was given, and any knowledge pairs with it
            given.setdefault(a.entry_id, set())
            continue
        kg = "pool" if a.kg is None else value_digest(a.kg.model_dump(mode="json"))
        absent = sorted(t.model_dump_json() for t in a.absent or [])
        given.setdefault(a.entry_id, set()).add(value_digest([a.setting, "pool" if kg == pool(a.entry_id) else kg, absent]))
    return {e: value_digest(sorted(g))[7:23] if g else MISSING for e, g in sorted(given.items())}


def _score_all(
    todo: list[Answer],
    chunk_size: int,
    entries: dict[str, DatasetEntry],
    active: Sequence[Metric],
    unavailable: dict[str, str],
    output: ResumableOutput[AnswerScores],
    done: dict[str, AnswerScores],
    bar: Progress,
) -> None:
    """Score `todo` chunk by chunk, every metric over a chunk at once; each chunk's rows are
    written as soon as it is scored (see `_chunks`)."""
    for chunk in _chunks(todo, chunk_size):
        for row in score_answers(chunk, entries, active, unavailable):
            output.write(row)
            done[row.answer_id] = row
        bar.update(len(chunk))


def score_answers(answers: Sequence[Answer], entries: dict[str, DatasetEntry], active: Sequence[Metric], unavailable: dict[str, str]) -> list[AnswerScores]:
    """Each answer's row of scores and verdicts, every metric over the answers at once: what
    `kalma evaluate` writes, and what Inspect's scorer records per sample (`evaluation.inspect_scorer`)."""
    language = next((m.options.language for m in active), DEFAULT_LANGUAGE)  # every metric was given the dataset's
    items = [EvalItem.build(a, entries.get(a.entry_id), language=language) for a in answers]
    rows = [AnswerScores(answer_id=a.answer_id(), entry_id=a.entry_id, markup=it.markup_counts()) for a, it in zip(answers, items)]
    judged: list[list[Scored]] = [[] for _ in answers]
    for m in active:
        if m.name in unavailable:  # declared needs, enforced once here
            for row in rows:
                row.notes[m.name] = f"{m.name} unavailable: it needs --{unavailable[m.name]}"
            continue
        for row, s, mine in zip(rows, m.score(items), judged):
            row.values[m.name], row.counts[m.name] = s.values, s.counts
            row.notes.update(s.notes)
            mine.append(s)
            if s.details:
                row.details[m.name] = s.details
    for a, row, it, mine in zip(answers, rows, items, judged):
        row.verdicts = assemble(it, mine)
        if a.meta.get("missing"):
            row.notes["missing"] = MISSING_NOTE
    return rows


FIRST_CHUNK, CHUNK_SECONDS = 4, 10.0


def _chunks(todo: list[Answer], largest: int) -> Iterator[list[Answer]]:
    """The answers in chunks that grow from FIRST_CHUNK to `largest` while one takes under
    CHUNK_SECONDS, and shrink when one takes longer: model metrics batch well over a chunk, and
    every chunk's rows reach the file when it is scored, so a run stopped early keeps its rows
    (a first chunk of 64 answers scored by CONNER on a CPU kept nothing for a minute)."""
    size, start = min(FIRST_CHUNK, largest), 0
    while start < len(todo):
        began = time.monotonic()
        yield todo[start : start + size]
        start += size
        took = time.monotonic() - began
        size = max(1, min(largest, size * 2 if took < CHUNK_SECONDS / 2 else size // 2 if took > CHUNK_SECONDS else size))


KG_GIVEN = ("pool", "none")  # an answers header's `kg_given`: the entry's whole pool, or no knowledge at all (closed book)


def header_kg_given(path: str | Path, header: dict[str, Any]) -> str | None:
    """What an answers file's header says its answers were given, when it says (`kg_given`)."""
    given = header.get("kg_given")
    if given is not None and given not in KG_GIVEN:
        raise ConfigError(f"{path}:1: field 'kg_given': {given!r} is not one of {', '.join(KG_GIVEN)} (the knowledge every answer was given)")
    return given


def knowledge_given(answers: list[Answer], entries: dict[str, DatasetEntry], header: str | None) -> tuple[list[Answer], list[str]]:
    """Each answer with the absent set its [NA] marks are scored against, and what every report
    must say first about how it was found. An answer's own `absent` wins; else it follows from the
    KG given, as `kalma answer` computes it: the answer's `kg`, else the header's `kg_given`
    (`none`: closed book, the whole minimum set is absent), else the entry's full pool, assumed
    and counted."""
    out, assumed = [], 0
    for a in answers:
        e = entries.get(a.entry_id)
        if a.absent is not None or e is None or e.minimum_set is None:
            out.append(a)
            continue
        update: dict[str, Any] = {}
        if a.kg is None and header == "none":
            update["kg"] = KnowledgeGraph()
        elif a.kg is None and header is None and not a.meta.get("missing"):
            assumed += 1
        update["absent"] = e.absent_from(update.get("kg", a.kg) or e.knowledge_pool)
        out.append(a.model_copy(update=update))
    if not assumed:
        return out, []
    said = "answers do not say which knowledge they were" if assumed > 1 else "answer does not say which knowledge it was"
    return out, [
        f"{assumed} {said} given: {FULL_POOL} (the [NA] metrics' absent set is "
        'what the pool lacks of the minimum set). Give each line its `kg` or `absent`, or the file\'s header `"kg_given": "none"` for a closed-book system.'
    ]


def general_only(entries: list[DatasetEntry], answers: Sequence[Answer]) -> tuple[list[DatasetEntry], list[str]]:
    """Answers to the general questions only (`kalma_general`, `--setting general`): an entry without
    a general question was never asked, so it is left out, and said, not scored as an empty answer."""
    if not answers or any(a.setting != "general" for a in answers):
        return entries, []
    answered = {a.entry_id for a in answers}
    unasked = [e.id for e in entries if not e.general_question and e.id not in answered]
    if not unasked:
        return entries, []
    shown = ", ".join(unasked[:5]) + (f" and {len(unasked) - 5} more" if len(unasked) > 5 else "")
    said = f"general setting: {len(unasked)} of {len(entries)} entries have no general question, so none was asked: left out ({shown})"
    return [e for e in entries if e.id not in set(unasked)], [said]


def missing_caveat(answers: Sequence[Answer], n_entries: int) -> list[str]:
    """The entries without an answer (`fill_missing`'s), named first: they are scored as empty answers."""
    filled = [a for a in answers if a.meta.get("missing")]
    if not filled:
        return []
    missing = list(dict.fromkeys(a.entry_id for a in filled))
    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    runs = f" ({len(filled)} answers over {len({a.run for a in filled})} runs)" if len(filled) > len(missing) else ""
    return [
        f"MISSING: {len(missing)} of {n_entries} entries have no answer{runs}: {shown}. Each is scored as an empty answer, which lowers recall; "
        "score a subset with --limit, or file a partial submission with `kalma bench submit --partial`."
    ]


def _attach_kg(answers: list[Answer], entries: dict[str, DatasetEntry], spec: str) -> list[Answer]:
    """Judge answers without their own KG against `spec`'s subgraphs of the entry's people."""
    from kalma.kg import open_source

    src = open_source(spec)
    people = sorted({q for a in answers if a.kg is None for q in entries[a.entry_id].people})
    graphs = src.subgraphs(people)
    return [
        a if a.kg is not None else a.model_copy(update={"kg": KnowledgeGraph(entities=[graphs[q] for q in entries[a.entry_id].people if q in graphs])})
        for a in answers
    ]


_KNOWLEDGE_LINE = re.compile(r"\bQ\d+\s*\|[^|\n]*\|")  # `Q1 | entity | relation | value`, the prompt's own lines


def cites_nothing(row: AnswerScores) -> bool:
    """An answer with no citation, [NA] or bracket of any kind."""
    return not any(row.markup.get(k, 0) for k in ("citations", "na_marks", "malformed"))


def answer_caveats(answers: Sequence[Answer], rows: Sequence[AnswerScores], models: Sequence[str]) -> list[str]:
    """What the answers say of the model before any metric does: most cite nothing (no citation,
    [NA] or bracket at all), or copy the knowledge lines instead of answering; cut at the token limit."""
    by_id = {r.answer_id: r for r in rows}
    written = [(a, by_id.get(a.answer_id())) for a in answers if not a.meta.get("missing")]
    who = ", ".join(models) or "the model"
    out = []
    bare = [a for a, r in written if r is not None and cites_nothing(r)]
    if written and len(bare) / len(written) > UNUSABLE_LIMIT:
        copied = sum(bool(_KNOWLEDGE_LINE.search(a.text)) for a in bare)
        how = f"; {copied} of them copy the knowledge list (`QID | entity | relation | value` lines) instead of answering" if copied else ""
        said = f"{len(bare)} of {len(written)} answers by {who} cite nothing (no citation, [NA] or bracket){how}"
        out.append(f"{said}: citation figures say little of the model.")
    cut = sum(a.meta.get("finish_reason") == "length" for a, _ in written)
    if cut:
        out.append(f"{cut} of {len(written)} answers by {who} were cut at the token limit (--max-tokens), and are scored as they are.")
    return out + dominant(rows)


def dominant(rows: Sequence[AnswerScores]) -> list[str]:
    """The answers holding more than a quarter of all citations, and more than twice an even
    share: the micro figures, pooled over citations, are then mostly theirs."""
    held = {r.answer_id: r.markup.get("citations", 0) for r in rows}
    total = sum(held.values())
    out = []
    for answer, n in held.items():
        if total and n / total > max(DOMINANT_SHARE, 2 / len(held)):
            out.append(
                f"Answer {answer} holds {n} of the {total} citations ({100 * n / total:.0f}%): micro figures, pooled over citations, "
                "are mostly this one answer's (macro figures weigh each answer once). A citation written again counts again, "
                "as correct or not each time."
            )
    return out


def dataset_limits(entries: Sequence[DatasetEntry], answers: Sequence[Answer], metrics: Sequence[str]) -> list[str]:
    """What the dataset (and the answers' absent sets) cannot support, said once and up front."""
    out = []
    n = len(entries)
    no_set = sum(e.minimum_set is None for e in entries)
    if "citation" in metrics and no_set:
        who = "The dataset has no minimum knowledge sets" if no_set == n else f"{no_set} of {n} entries have no minimum knowledge set"
        out.append(f"{who} (as in the authors' release): citation precision, recall and F1 are n/a for them; correctness and alignment still apply.")
    no_ref = sum(not e.reference for e in entries)
    wanting = [m for m in ("kprec", "conner-extrinsic") if m in metrics]
    if wanting and no_ref:
        who = "No entry has a reference answer" if no_ref == n else f"{no_ref} of {n} entries have no reference answer"
        out.append(f"{who}: {', '.join(wanting)} reference-based values are n/a for them.")
    if "na" in metrics and answers and all(a.absent is None for a in answers):
        out.append(
            "No answer has an absent set (what the KG given lacks of the minimum set), and without minimum sets none can be derived: "
            "[NA] precision and recall are n/a. Give each answer's `absent` to score them."
        )
    return out


def scored(m: Metric, rows: Sequence[AnswerScores]) -> list[Scored]:
    """`m`'s part of each row, as its `aggregate` reads it."""
    return [Scored(r.values.get(m.name, {}), r.counts.get(m.name, {}), details=r.details.get(m.name, {})) for r in rows]


def na_reasons(m: Metric, rows: Sequence[AnswerScores], own: Sequence[Scored], outputs: Iterable[str], said: str = "") -> dict[str, str]:
    """Why each of `outputs` is n/a for `m` over `rows`, as every report says it: what the caller
    knows (`said`), else what the metric knows, else the rows' commonest note."""
    notes = Counter(note for r in rows if (note := r.notes.get(m.name)))
    return {k: said or m.unavailable(k, own) or (notes.most_common(1)[0][0] if notes else "no answer has it") for k in outputs}


def summarize(
    rows: Sequence[AnswerScores],
    metrics: Sequence[Metric],
    config: dict[str, Any],
    models: dict[str, str],
    answer_models: list[str],
    problems: list[Problem],
    n_missing: int,
    limits: Sequence[str] = (),
    notices: Sequence[str] = (),
    complete: bool = True,
    from_cache: int = 0,
    first: Sequence[str] = (),
) -> Summary:
    values: dict[str, dict[str, float | None]] = {}
    dropped: dict[str, dict[str, int]] = {}
    unavailable: dict[str, dict[str, str]] = {}
    support: dict[str, dict[str, int]] = {}
    failed: dict[str, dict[str, Any]] = {}
    failure_caveats: list[str] = []
    for m in metrics:
        own = scored(m, rows)
        v, d = m.aggregate(own)
        if set(v) != set(m.outputs):  # a renamed key must fail here, not blank a table column downstream
            raise RuntimeError(f"metric {m.name!r} returned {sorted(set(v) ^ set(m.outputs))} against its declared outputs")
        f = m.failures(own)
        if f is not None and f.unusable:
            failed[m.name] = asdict(f) | {"over_limit": f.over_limit}
            failure_caveats.append(f.caveat("G-Eval" if m.name == "geval" else "Entailment" if "nli" in m.needs else m.name))
            if f.over_limit:  # never a number from the few replies that parsed
                v = {k: (x if m.scale(k) == "count" else None) for k, x in v.items()}
        values[m.name] = v
        support[m.name] = m.support(own, d)
        if d:
            dropped[m.name] = d
        said = f"{f.unusable} of {f.replies} {f.what} unreadable from {f.model}" if f is not None and f.over_limit else ""
        why = na_reasons(m, rows, own, [k for k, x in v.items() if x is None], said)
        if why:
            unavailable[m.name] = why
    caveats = [UNFINISHED] if not complete else []
    caveats += list(first)  # what the answers themselves say of the model (none named, no citations)
    caveats += [f"Answers: {n}" for n in dict.fromkeys(notices)]  # e.g. the template backend is not a language model
    caveats += list(dict.fromkeys(failure_caveats))  # a judge whose replies could not be read
    caveats += list(dict.fromkeys(c for m in metrics for c in m.caveats()))
    caveats += list(limits)
    total = {k: sum(r.markup.get(k, 0) for r in rows) for k in MARKUP_TOTALS}
    if any("correct" in r.counts.get("citation", {}) for r in rows):
        total["correct_citations"] = sum(r.counts.get("citation", {}).get("correct", 0) for r in rows)
    malformed = {k: n for k in MALFORMED_REASONS if (n := sum(r.markup.get(f"malformed_{k}", 0) for r in rows))}
    return Summary(
        metrics=values,
        finished=complete,
        counts={
            "answers": len(rows),
            **total,
            "missing_answers_scored_empty": n_missing,
            "answers_from_cache": from_cache,
            "answers_citing_nothing": sum("missing" not in r.notes and cites_nothing(r) for r in rows),
        },
        malformed=malformed,
        dropped=dropped,
        unavailable=unavailable,
        support=support,
        scales={m.name: {k: m.scale(k) for k in m.outputs} for m in metrics},
        models={"answers": ", ".join(answer_models) or "none", **models},
        caveats=caveats,
        failures=failed,
        problems=dict(Counter(p.kind for p in problems)),
        notes=_notes(rows) + [p.message for p in problems],
        provenance=provenance(config=config),
    )


COVERS = (
    "the sampling of the questions (which entries the dataset holds); not the judge's own error, "
    "nor the model's sampling, which the spread over runs shows where entries have several runs"
)


ALL_RUNS = "all runs"  # the one condition of answers whose runs differ by their seed alone


def run_conditions(answers: Sequence[Answer]) -> dict[str, str]:
    """Each run's condition: what its answers were asked under but the seed (the question's
    setting, the temperature and other generation settings), named by what differs between the
    conditions; ALL_RUNS when they are one."""
    asked: dict[str, dict[str, Any]] = {}
    for a in answers:
        if not a.meta.get("missing"):  # an empty stand-in says nothing of its run's settings
            asked.setdefault(a.run, {"setting": a.setting, **{k: v for k, v in a.settings.items() if k != "seed"}})
    distinct = {value_digest(c): c for c in asked.values()}
    if len(distinct) <= 1:
        return dict.fromkeys(asked, ALL_RUNS)
    differ = sorted({k for c in distinct.values() for k in c if any(c.get(k) != o.get(k) for o in distinct.values())})
    return {run: ", ".join(f"{k}={c.get(k)}" for k in differ) for run, c in asked.items()}


def uncertainty(
    rows: Sequence[AnswerScores],
    metrics: Sequence[Metric],
    values: dict[str, dict[str, float | None]],
    resamples: int,
    seed: int,
    conditions: dict[str, str] | None = None,
) -> tuple[dict[str, dict[str, Bounds]], Resampling | None, dict[str, dict[str, dict[str, Spread]]]]:
    """Each value's interval over dataset entries and, per condition (`conditions`: each run's,
    `run_conditions`) whose entries have several runs (seeds), its spread over those runs; values
    that are n/a get neither."""
    if not rows or resamples <= 0:
        return {}, None, {}
    answers = per_answer(rows, metrics)
    by_entry = answers.by([r.entry_id for r in rows])
    found = intervals(by_entry, resamples=resamples, seed=seed)
    of_run = conditions or {}
    spreads: dict[str, dict[str, tuple[float | None, float | None, int]]] = {}
    runs: list[str] = []
    for condition in sorted(set(of_run.get(run_of(r), ALL_RUNS) for r in rows)):
        mine = [i for i, r in enumerate(rows) if of_run.get(run_of(r), ALL_RUNS) == condition]
        by_run = PerAnswer(answers.matrix[mine], answers.keys, answers.estimates).by([run_of(rows[i]) for i in mine])
        if len(by_run.units) > 1:
            spreads[condition], runs = spread(by_run), runs + by_run.units
    bounds: dict[str, dict[str, Bounds]] = {}
    over_runs: dict[str, dict[str, dict[str, Spread]]] = {}
    for metric, vals in values.items():
        for k, v in vals.items():
            if v is None or (i := found.get(f"{metric}.{k}")) is None:
                continue
            bounds.setdefault(metric, {})[k] = Bounds(low=i.low, high=i.high, undefined=i.undefined)
            for condition, by_figure in spreads.items():
                if (sp := by_figure.get(f"{metric}.{k}")) is not None:
                    over_runs.setdefault(condition, {}).setdefault(metric, {})[k] = Spread(mean=sp[0], std=sp[1], runs=sp[2])
    how = Resampling(
        method="percentile bootstrap over dataset entries, each resampled with all of its answers",
        unit="dataset entry",
        units=len(by_entry.units),
        resamples=resamples,
        seed=seed,
        level=LEVEL,
        covers=COVERS,
        runs=runs,
    )
    return bounds, how, over_runs


def _notes(rows: Sequence[AnswerScores]) -> list[str]:
    """Each distinct note once; one that concerns only some answers says how many and which (the
    first five). A note on every answer is about the run, and said as it is."""
    who: dict[str, list[str]] = {}
    for r in rows:
        for n in r.notes.values():
            who.setdefault(n, []).append(r.entry_id if n == MISSING_NOTE else r.answer_id)
    out = []
    for note, ids in sorted(who.items()):
        shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        out.append(note if len(ids) == len(rows) else f"{note} ({len(ids)} answer{'s' if len(ids) != 1 else ''}: {shown})")
    return out


def _over(s: Summary, metric: str, key: str) -> str:
    """What a value is computed over; an F1 is over what its precision and recall are over."""
    support = s.support.get(metric, {})
    if "f1" in key and (p := key.replace("f1", "precision")) in support and (r := key.replace("f1", "recall")) in support:
        return f"P: {support[p]}, R: {support[r]}"
    return str(support.get(key, ""))


def show_bounds(b: Bounds | None, scale: str, how: Resampling | None) -> str:
    """An interval as the tables print it, with the resamples that had no value said."""
    if b is None or b.low is None or b.high is None:
        return "–"
    missing = f" ({b.undefined:,} of {how.resamples:,} resamples without a value)" if b.undefined and how else ""
    return f"[{show(b.low, scale)}, {show(b.high, scale)}]{missing}"


def resampling_line(how: Resampling) -> str:
    return f"Intervals: {how.method} ({how.units:,} entries, {how.resamples:,} resamples, seed {how.seed}); they cover {how.covers}."


def _mark_unfinished(out: Path, to_score: int, answer_models: list[str], language: str = DEFAULT_LANGUAGE) -> None:
    """Replace whatever summary, table and page the folder holds (another system's, with
    --overwrite) by an unfinished summary, until the run writes its own: `kalma compare`, `bench`
    and a reader all see that it stopped, whatever stops it."""
    out.joinpath(PAGE_FILE).unlink(missing_ok=True)
    models = {"answers": ", ".join(answer_models) or "none"}
    summary = Summary(metrics={}, finished=False, to_score=to_score, models=models, caveats=[UNFINISHED], language=language)
    out.joinpath(SUMMARY_FILE).write_text(summary.model_dump_json(indent=2))
    out.joinpath(TABLE_FILE).write_text(markdown_table(summary))


def markdown_table(s: Summary) -> str:
    lines = [f"# Evaluation of {s.models.get('answers', '?')}", "", f"Language: {language_line(s.language)}", ""]
    if (config := s.provenance.get("config") or {}).get("dataset"):
        kg = config.get("dataset_kg")
        lines += [
            f"Dataset: {config['dataset']} ({str(config.get('dataset_digest'))[:19]}…), true of " + (describe(kg) if kg else "a KG its header does not name"),
            "",
        ]
    if s.caveats:
        lines += ["Read first:", ""] + [f"- {c}" for c in s.caveats] + [""]
    lines += ["Totals: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in s.counts.items()), ""]
    if s.problems:
        lines += ["Problems of the answers file: " + said(s.problems), ""]
    if s.malformed:
        lines += ["Malformed markup: " + ", ".join(f"{k} {v}" for k, v in s.malformed.items()), ""]
    how = s.resampling
    level = f"{100 * how.level:g}% interval" if how else "interval"
    lines += [f"| metric | value | {level} | scale | computed over | dropped |", "|---|---|---|---|---|---|"]
    for name, values in s.metrics.items():
        for k, v in values.items():
            scale = s.scales.get(name, {}).get(k, "rate")
            why = s.unavailable.get(name, {}).get(k)
            value = f"{show(v, scale)} ({why})" if why else show(v, scale)
            bounds = s.intervals.get(name, {}).get(k)
            row = [f"{name}.{k}", value, show_bounds(bounds, scale, how), SCALES.get(scale, scale), _over(s, name, k), str(s.dropped.get(name, {}).get(k, ""))]
            lines.append("| " + " | ".join(row) + " |")
    if how is not None:
        lines += ["", resampling_line(how)]
    if s.run_spread:
        lines += ["", "Spread over the runs (seeds) of each condition: the model's sampling, apart from the interval over entries.", ""]
        lines += ["| condition | metric | mean over runs | sd | runs |", "|---|---|---|---|---|"]
        for condition, by_metric in s.run_spread.items():
            for name, spreads in by_metric.items():
                for k, sp in spreads.items():
                    scale = s.scales.get(name, {}).get(k, "rate")
                    lines.append(f"| {condition} | {name}.{k} | {show(sp.mean, scale)} | {show(sp.std, scale)} | {sp.runs} |")
    lines += split_lines(s)
    lines += ["", "Models:", ""] + [f"- {k}: {v}" for k, v in s.models.items()]
    if s.judges:
        lines += ["", "Judges (what `kalma compare` holds equal):", ""] + judge_lines(s.judges)
    if s.notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in s.notes]
    return "\n".join(lines) + "\n"


def in_language(options: EvalOptions, language: str) -> EvalOptions:
    """`options` for a dataset in `language`: every metric gets it, and a judge that reads text by
    its language (`READS_LANGUAGE`: the lexical judge, the checkers), unless its spec names a
    language, reads that one."""
    nli = options.nli
    if language != DEFAULT_LANGUAGE and _reads_language(nli) and "language=" not in nli:
        nli = f"lexical:language={language}" if nli == "lexical" else f"{nli},language={language}"
    return replace(options, language=language, nli=nli)


def any_language(spec: str) -> str:
    """A judge's spec as `kalma compare` holds it across languages: a judge reading each dataset's
    own language (`in_language`) is one judge, as the languages' text rules are part of what a
    comparison of two languages measures."""
    if not _reads_language(spec):
        return spec
    return re.sub(r"[:,]language=[\w-]+", "", spec)


def _reads_language(spec: str) -> bool:
    """Whether the judge `spec` names reads text by its language (`kalma.models.READS_LANGUAGE`)."""
    from kalma.models import READS_LANGUAGE

    return spec.partition(":")[0].partition(",")[0] in READS_LANGUAGE


def language_caveat(code: str) -> list[str]:
    """What a reader of a run in another language than English must know first."""
    if code == DEFAULT_LANGUAGE:
        return []
    name = language_line(code)
    rules = "its rules" if written(code) else f"the rules every language shares (no abbreviations or function words are written for {code})"
    return [
        f"The dataset is in {name}: sentences are split, and the lexical judge and the token metrics read words, by {rules}; "
        "a model named below judges the text as it is, whatever languages it was trained on."
    ]


__all__ = ["evaluate", "EvalOptions", "markdown_table"]


def other_dataset(header: dict[str, Any], dataset: str | Path | Sequence[DatasetEntry], entries: Sequence[DatasetEntry]) -> tuple[str, str] | None:
    """(the dataset an answers file's header says it was made on, the one given), in words, when
    they differ: an Inspect log names its task's dataset, `kalma answer`'s file its entries' digest."""
    given = str(dataset) if isinstance(dataset, (str, Path)) else "the entries given"
    config, inputs = header.get("provenance", {}).get("config") or {}, header.get("provenance", {}).get("run", {}).get("inputs") or {}
    named = (config.get("inspect") or {}).get("dataset")
    if isinstance(named, str) and named != (str(Path(dataset).resolve()) if isinstance(dataset, (str, Path)) else None):
        return named, given
    digest, ours = inputs.get("dataset"), records_digest(entries)
    if isinstance(digest, str) and digest != ours:
        return f"the one of digest {digest[:19]}… (its header's)", f"{given} (digest {ours[:19]}…)"
    return None


def split_figures(
    rows: Sequence[AnswerScores], metrics: Sequence[Metric], entries: dict[str, DatasetEntry], resamples: int, seed: int
) -> dict[str, dict[str, Any]]:
    """Per split of the dataset (an entry's `meta["split"]`: `changed`, `unchanged`), every figure
    over that split's answers and its interval: the bootstrap over entries, restricted to the split's."""
    split_of = {i: e.meta["split"] for i, e in entries.items() if isinstance(e.meta.get("split"), str)}
    out: dict[str, dict[str, Any]] = {}
    for split in sorted(set(split_of.values())):
        mine = [r for r in rows if split_of.get(r.entry_id) == split]
        values = {m.name: m.aggregate(scored(m, mine))[0] for m in metrics}
        bounds = uncertainty(mine, metrics, values, resamples, seed)[0]
        entries_n = len({r.entry_id for r in mine})
        out[split] = {
            "entries": entries_n,
            "answers": len(mine),
            "metrics": values,
            "intervals": {m: {k: b.model_dump() for k, b in v.items()} for m, v in bounds.items()},
        }
    return out


def split_lines(s: Summary) -> list[str]:
    """Every figure per split, with its interval over the split's entries (none without splits)."""
    if not s.splits:
        return []
    since = (s.provenance.get("config") or {}).get("changed_since")
    older = describe(since) if isinstance(since, dict) and since.get("spec") else "the previous KG"
    lines = ["", f"Per split (`changed`: knowledge new or changed since {older}; `unchanged`: held by both):", ""]
    lines += ["| split | entries | metric | value | interval |", "|---|---|---|---|---|"]
    for split, found in s.splits.items():
        for name, values in found["metrics"].items():
            for k, v in values.items():
                scale = s.scales.get(name, {}).get(k, "rate")
                b = found["intervals"].get(name, {}).get(k)
                lines.append(
                    f"| {split} | {found['entries']} | {name}.{k} | {show(v, scale)} | {show_bounds(Bounds(**b) if b else None, scale, s.resampling)} |"
                )
    return lines
