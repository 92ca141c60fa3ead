"""Tables, ablations and a leaderboard a paper can cite (issue 22): datasets never ranked together,
every value with its scale, n and ± everywhere, the same [NA] metrics in every condition, every
experiment with its own LLMs and retrieval, plain answers files submitted by options, and what a
dataset cannot support said up front."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.experiments import Bench, BenchConfig, condition_file, format_table
from bench.leaderboard import collect, render
from bench.submissions import submit
from dataset_builder.demo import demo_entries
from evaluation.base import EvalOptions
from evaluation.runner import evaluate, markdown_table
from kalma.cli import main
from kalma.jsonl import read_jsonl, write_jsonl
from kalma.kg import open_source
from kalma.models.template import TemplateLLM
from kalma.schema import Answer, DatasetEntry
from tests.servers import answering, scripted_server


@pytest.fixture(scope="module")
def entries():
    return demo_entries(open_source("demo"))


def _answers(entries, path: Path, text: str = "Born in Rome [NA].", seed: int | None = 0) -> Path:
    write_jsonl(path, [Answer(entry_id=e.id, text=text, model="m", seed=seed) for e in entries], "answers")
    return path


def test_a_1_to_5_rating_is_never_shown_x100(entries, tmp_path):
    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    with scripted_server([answering(lambda prompt: "1")]) as (url, _):
        s = evaluate(
            tmp_path / "d.jsonl",
            _answers(entries, tmp_path / "a.jsonl"),
            tmp_path / "out",
            metrics=["geval"],
            options=EvalOptions(judge=f"openai-compatible:{url}/v1:judge"),
            progress=False,
        )
    assert s.value("geval.fluency_mean") == 1.0 and s.scales["geval"]["fluency_mean"] == "1-5" and s.scales["geval"]["fluency_invalid"] == "count"
    table = markdown_table(s)
    assert "| geval.fluency_mean | 1.00 | [1.00, 1.00] | a 1-5 rating | 6 |" in table and "100.0" not in table  # its interval on its scale too


def test_datasets_are_never_ranked_together(entries, tmp_path):
    small = entries[:3]
    write_jsonl(tmp_path / "demo.jsonl", entries, "dataset")
    write_jsonl(tmp_path / "small.jsonl", small, "dataset")
    cite = "Born in Rome [Q212657, place of birth: Rome]."
    submit(
        _answers(entries, tmp_path / "a.jsonl", cite), tmp_path / "demo.jsonl", tmp_path / "b", EvalOptions(), ["citation"], meta={"name": "full", "model": "m"}
    )
    submit(_answers(small, tmp_path / "s.jsonl"), tmp_path / "small.jsonl", tmp_path / "b", EvalOptions(), ["citation"], meta={"name": "small", "model": "m"})
    tables = collect(tmp_path / "b").tables
    assert [t.dataset.split(" (")[0] for t in tables] == ["demo", "small", "BioKaLMA as the paper measured it"]
    assert [[r.name for r in t.rows] for t in tables[:2]] == [["full"], ["small"]]
    assert all(r.reference for r in tables[2].rows) and "6 questions" in tables[0].dataset and "3 questions" in tables[1].dataset
    filed = json.loads((tmp_path / "b" / "submissions" / "small" / "submission.json").read_text())
    assert filed["dataset"]["entries"] == 3 and filed["dataset"]["digest"].startswith("sha256:") and filed["answers_scored"] == 3
    assert filed["submission"]["seeds"] == [0]
    # the same questions written again (a new header) are the same dataset
    write_jsonl(tmp_path / "again.jsonl", small, "dataset")
    submit(_answers(small, tmp_path / "s2.jsonl"), tmp_path / "again.jsonl", tmp_path / "b", EvalOptions(), ["citation"], meta={"name": "small2", "model": "m"})
    assert [len(t.rows) for t in collect(tmp_path / "b").tables] == [1, 2, 3]
    page, damaged = render(tmp_path / "b", tmp_path / "site")
    html = page.read_text()
    assert damaged == [] and 'data-tables="3"' in html and html.count('<table class="board">') == 3


def test_the_papers_rows_sit_beside_the_release_only(tmp_path):
    release = [
        DatasetEntry(id=f"biokalma-{i}", general_question="", specific_question=f"Who was {i}?", meta={"source": "biokalma-release"}) for i in range(1085)
    ]
    write_jsonl(tmp_path / "bk.jsonl", release, "dataset")
    write_jsonl(tmp_path / "a.jsonl", [Answer(entry_id=e.id, text="x [NA].", model="m") for e in release], "answers")
    submit(tmp_path / "a.jsonl", tmp_path / "bk.jsonl", tmp_path / "b", EvalOptions(), ["citation"], meta={"name": "mine", "model": "m"})
    (table,) = collect(tmp_path / "b").tables
    assert [r.name for r in table.rows] == ["mine", "GPT-4 (0.5)", "ChatGPT (0.5)", "LLaMA-7B"] and "minimum sets this release lacks" in table.note


def test_a_plain_answers_file_is_submitted_by_options(entries, tmp_path):
    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    plain = tmp_path / "a.jsonl"
    write_jsonl(plain, [Answer(entry_id=e.id, text="She was a painter [Q212657, occupation: painter].", model="m", seed=3) for e in entries], "answers")
    args = ["bench", "submit", str(plain), "--dataset", str(tmp_path / "d.jsonl"), "--leaderboard", str(tmp_path / "b")]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 1 and res.stderr.splitlines() == [
        "no name: give --name (or `submission.name` in the file's header)",
        "no model: give --model (or `submission.model` in the file's header)",
        f"kalma: {plain}: 2 problems, listed above; nothing was filed",
    ]
    res = CliRunner().invoke(
        main, [*args, "--name", "painter-v1", "--model", "org/m", "--url", "https://example.org/m", "--description", "one line", "--kg", "demo"]
    )
    assert res.exit_code == 0, res.output
    assert "6 answers on d (6 questions" in res.output and "seeds [3]" in res.output
    filed = json.loads((tmp_path / "b" / "submissions" / "painter-v1" / "submission.json").read_text())
    assert filed["submission"] == {
        "name": "painter-v1",
        "model": "org/m",
        "url": "https://example.org/m",
        "description": "one line",
        "seeds": [3],
        "settings": {},
    }
    assert filed["summary"]["provenance"]["config"]["kg_source"] == "demo"


@pytest.fixture(scope="module")
def two_llm_run(tmp_path_factory):
    """A bench run whose experiments each name their own LLMs (two: the template and the same
    patterns behind a real OpenAI-compatible server) and retrieval."""
    d = tmp_path_factory.mktemp("two-llms")
    with scripted_server([answering(TemplateLLM().respond)]) as (url, _):
        other = f"openai-compatible:{url}/v1:patterns"
        toml = f"""
name = "two"
seeds = [0, 1]
llms = ["template"]
[experiments.main]
retrieval = "ner"
[experiments.knowledge_removal]
llms = ["template", "{other}"]
k = [0, 2]
[experiments.retrieval]
accuracies = [1.0, 0.6]
"""
        (d / "b.toml").write_text(toml)
        results = Bench(BenchConfig.load(d / "b.toml"), d / "run", progress=False).run()
    return results, other


def test_every_experiment_runs_its_own_llms_and_retrieval(two_llm_run):
    results, other = two_llm_run
    removal = {(r.llm, r.condition) for r in results.results if r.experiment == "knowledge_removal"}
    assert removal == {(llm, k) for llm in ("template", other) for k in ("k=0", "k=2")}
    main = [r for r in results.results if r.experiment == "main"]
    assert {r.retrieval for r in main} == {"ner"} and {r.seed for r in main} == {0, 1}


def test_na_figures_are_the_same_metrics_in_every_condition(two_llm_run):
    results, _ = two_llm_run
    for exp, rows in results.tables.items():
        for row in rows:
            precision, recall = row.values["na.na_precision_micro"], row.values["na.na_recall_micro"]
            assert precision is not None and recall is not None, (exp, row.condition)  # computed, or n/a with its count
            if row.condition in {"ner", "k=0", "100"} and exp != "main":
                assert recall.mean is None and recall.support == 0  # nothing absent: n/a, never 0
    k2 = next(r for r in results.tables["knowledge_removal"] if r.condition == "k=2" and r.llm == "template")
    assert k2.values["na.na_recall_micro"].support == 2 * 2 * 6  # 2 removed x 6 entries x 2 seeds


def test_tables_show_n_seeds_and_spread(two_llm_run):
    results, _ = two_llm_run
    text = format_table("retrieval", results.tables["retrieval"], results.dataset)
    lines = text.splitlines()
    assert lines[0].startswith("retrieval on kalma demo (6 questions, ")
    assert lines[1].split()[:4] == ["condition", "llm", "n", "seeds"]
    row60 = next(line for line in lines if line.strip().startswith("60"))
    assert " 6 " in row60 and "0,1" in row60 and "±" in row60
    assert "n/a (0)" in next(line for line in lines if line.strip().startswith("100"))  # [NA] recall: nothing was absent


def test_what_the_dataset_cannot_support_is_said_once_up_front(tmp_path):
    release = [DatasetEntry(id=f"r{i}", general_question="", specific_question=f"Who was {i}?") for i in range(3)]
    write_jsonl(tmp_path / "d.jsonl", release, "dataset")
    write_jsonl(tmp_path / "a.jsonl", [Answer(entry_id=e.id, text="x [NA].", model="m") for e in release], "answers")
    res = CliRunner().invoke(main, ["evaluate", "--dataset", str(tmp_path / "d.jsonl"), "--answers", str(tmp_path / "a.jsonl"), "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    note = "The dataset has no minimum knowledge sets (as in the authors' release): citation precision, recall and F1 are n/a"
    assert res.stderr.count(note) == 1 and res.stdout.index("Read first:") < res.stdout.index("| metric |")
    assert "No answer has an absent set" in res.stdout


def test_distinct_model_specs_get_distinct_files():
    assert condition_file("main", "gold", "hf:org/model") != condition_file("main", "gold", "hf:org_model")


def test_retrieve_prints_one_json_document(tmp_path, entries):
    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    res = CliRunner().invoke(main, ["retrieve", "--dataset", str(tmp_path / "d.jsonl"), "--show", "2"])
    doc = json.loads(res.stdout)
    assert "the authors' own retrieval" in doc["reference"] and doc["questions"] == len(entries) and len(doc["first_disagreements"]) <= 2


def test_read_back_as_records(two_llm_run):
    results, _ = two_llm_run
    assert results.tables_note.startswith("micro x100") and all(len(r.seeds) == 2 for rows in results.tables.values() for r in rows)
    assert read_jsonl  # the module's readers stay importable for the rows above


@pytest.mark.parametrize(
    "field, value",
    [("seed", [1]), ("seed", 0.5), ("seed", None), ("seed", float("nan")), ("name", 12345), ("model", 7), ("name", "gpt-4о"), ("name", "model١")],
)
def test_a_submission_header_of_the_wrong_type_or_a_confusable_name_is_refused(entries, tmp_path, field, value):
    """Checked at submit, one problem naming the field; nothing is filed, so the board never fails later."""
    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    meta = {"name": "ok", "model": "m", "seed": 0, "settings": {}, field: value}
    header = json.dumps({"kalma": {"kind": "answers", "format_version": 3, "submission": meta}})  # NaN written as JSON's readers take it
    rows = [Answer(entry_id=e.id, text="x [NA].", model="m").model_dump_json() for e in entries]
    (tmp_path / "s.jsonl").write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    res = CliRunner().invoke(main, ["bench", "submit", str(tmp_path / "s.jsonl"), "--dataset", str(tmp_path / "d.jsonl"), "--leaderboard", str(tmp_path / "b")])
    assert res.exit_code == 1 and "nothing was filed" in res.stderr and f"'submission.{'seeds' if field == 'seed' else field}" in res.stderr, res.stderr
    assert not (tmp_path / "b" / "submissions").exists() or not any((tmp_path / "b" / "submissions").iterdir())


def test_names_differing_only_in_case_are_refused_and_csv_cells_cannot_be_formulas(entries, tmp_path):
    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    write_jsonl(tmp_path / "a.jsonl", [Answer(entry_id=e.id, text="x [NA].", model="m") for e in entries], "answers")
    args = ["bench", "submit", str(tmp_path / "a.jsonl"), "--dataset", str(tmp_path / "d.jsonl"), "--leaderboard", str(tmp_path / "b"), "--metrics", "citation"]
    assert CliRunner().invoke(main, [*args, "--name", "ok-1", "--model", '=HYPERLINK("http://x")']).exit_code == 0
    res = CliRunner().invoke(main, [*args, "--name", "OK-1", "--model", "m"])
    assert res.exit_code == 1 and "differs from the filed 'ok-1' only in case" in res.stderr
    assert CliRunner().invoke(main, ["leaderboard", str(tmp_path / "b"), "-o", str(tmp_path / "site")]).exit_code == 0
    cells = [c for row in csv.reader((tmp_path / "site" / "leaderboard.csv").open(encoding="utf-8")) for c in row]
    assert '\'=HYPERLINK("http://x")' in cells and not any(c.startswith(("=", "+", "@")) for c in cells)
    # one value in every rendering: no malformed citation is 0 in the CSV, the page and the Markdown alike
    row = next(r for r in csv.DictReader((tmp_path / "site" / "leaderboard.csv").open(encoding="utf-8")) if r["submission"] == "ok-1")
    md = (tmp_path / "site" / "leaderboard.md").read_text().splitlines()
    md_head = next(line for line in md if line.startswith("| Submission |")).split(" | ")
    md_row = dict(zip(md_head, next(line for line in md if line.startswith("| ok-1 |")).split(" | ")))
    page = (tmp_path / "site" / "index.html").read_text()
    assert row["malformed"] == "0" and md_row["Malformed"] == "0" and "<td>0</td>" in page


def test_every_report_says_dtype_and_device(tmp_path, dataset):
    """The NLI as the summary names it, and the runtime and hardware in its provenance."""
    from perf.random_models import build_bert_nli

    nli = f"hf-nli:{build_bert_nli(tmp_path / 'nli')}@fp32"
    (tmp_path / "a.jsonl").write_text('{"entry_id": "demo-crane", "text": "Stephen Crane wrote [Q206534, notable work: The Red Badge of Courage]."}\n')
    res = CliRunner().invoke(
        main, ["evaluate", "--dataset", str(dataset), "--answers", str(tmp_path / "a.jsonl"), "--nli", nli, "--limit", "4", "-o", str(tmp_path / "e")]
    )
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "e" / "summary.json").read_text())
    assert summary["models"]["alignment"] == f"{nli} @fp32 on CPU"
    prov = summary["provenance"]
    assert prov["hardware"]["gpus"] == [] and prov["hardware"]["cpus"] >= 1
    runtime = prov["model_runtimes"][nli]
    assert runtime | {"paths": None, "budget_bytes": None} == {
        "spec": nli.removesuffix("@fp32"),  # fp32 is the implicit identity
        "device": "CPU",
        "dtype": "fp32",
        "tf32": False,
        "attention": "transformers' default",
        "budget_bytes": None,
        "budget_from": "50% of the host's available memory when each call is planned",
        "pass_tokens": 2048,  # the tests' fixed pass width; a user's run names its calibration
        "pass_from": "KALMA_PASS_TOKENS",
        "memory_overhead": 1.0,
        "paths": None,
    }
    assert runtime["budget_bytes"] > 0
