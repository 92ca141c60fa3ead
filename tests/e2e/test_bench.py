"""Bench: exact ablations, submissions, a bench run, and the leaderboard page in Chromium."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.ablations import replacement_plan, retrieval_accuracy
from bench.experiments import Bench, BenchConfig, cell
from bench.leaderboard import collect, render
from bench.records import SubmissionMeta
from bench.submissions import SubmissionError, as_submission, submit, validate
from dataset_builder.demo import demo_entries
from evaluation.base import EvalOptions
from kalma.cli import main
from kalma.errors import BackendError
from kalma.jsonl import write_jsonl
from kalma.kg import open_source
from kalma.removal import remove_knowledge
from kalma.schema import Answer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def entries():
    return demo_entries(open_source("demo"))


@pytest.mark.parametrize("p", [1.0, 0.8, 0.6, 0.4, 0.2])
def test_retrieval_ablation_keeps_exactly_round_p_n(entries, p):
    n = sum(len(e.knowledge_pool.entities) for e in entries)
    cond = retrieval_accuracy(entries, p, seed=7)
    kept = sum(1 for e in entries for g in cond[e.id].kg.entities if g.qid in e.people)
    assert kept == round(p * n)
    for e in entries:  # every replacement is someone else, and graph counts are unchanged
        assert len(cond[e.id].kg.entities) == len(e.knowledge_pool.entities)
        assert len({g.qid for g in cond[e.id].kg.entities}) == len(cond[e.id].kg.entities)
    assert {k: v.kg for k, v in retrieval_accuracy(entries, p, seed=7).items()} == {k: v.kg for k, v in cond.items()}


def test_retrieval_replacements_vary_with_the_seed(entries):
    a, b = retrieval_accuracy(entries, 0.4, 1), retrieval_accuracy(entries, 0.4, 2)
    assert {k: v.kg.qids() for k, v in a.items()} != {k: v.kg.qids() for k, v in b.items()}
    for seed in (1, 2, 3):  # varied, not one stand-in for all: 9 graphs, 7 people, each entry excluding its own
        _, stand_in = replacement_plan(entries, seed)
        assert len({g.qid for g in stand_in.values()}) >= 5


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_the_retrieval_steps_are_nested(entries, seed):
    """As the paper: each step replaces an additional 20%; what was replaced stays replaced, by the same person."""
    steps = [retrieval_accuracy(entries, p, seed) for p in (1.0, 0.8, 0.6, 0.4, 0.2)]

    def kept_and_stand_ins(cond):
        kept = {(e.id, i) for e in entries for i, g in enumerate(cond[e.id].kg.entities) if g.qid == e.knowledge_pool.entities[i].qid}
        stand = {(e.id, i): g.qid for e in entries for i, g in enumerate(cond[e.id].kg.entities) if (e.id, i) not in kept}
        return kept, stand

    for higher, lower in zip(steps, steps[1:]):
        kept_hi, stand_hi = kept_and_stand_ins(higher)
        kept_lo, stand_lo = kept_and_stand_ins(lower)
        assert kept_lo < kept_hi  # strictly fewer, and a subset
        assert all(stand_lo[slot] == q for slot, q in stand_hi.items())


def test_knowledge_removal_is_nested_and_the_absent_set_is_what_was_removed(entries):
    for e in entries:
        removed = [{t.key() for t in remove_knowledge([e], k, 3)[e.id].absent or []} for k in range(4)]
        assert removed[0] == set() and removed[0] <= removed[1] <= removed[2] <= removed[3]
        assert all(len(r) == min(k, len(e.minimum_set or [])) for k, r in enumerate(removed))


@pytest.mark.parametrize("k", [0, 1, 2, 3, 9])
def test_knowledge_removal_removes_exactly_k(entries, k):
    cond = remove_knowledge(entries, k, seed=5)
    for e in entries:
        c = cond[e.id]
        removed = {t.key() for t in c.absent}
        assert len(removed) == min(k, len(e.minimum_set))
        assert not removed & c.kg.keys() and removed <= {t.key() for t in e.minimum_set}
        assert len(c.kg.triples()) == len(e.knowledge_pool.triples()) - len(removed)
        assert bool(c.note) == (k > len(e.minimum_set))
    assert {k2: v.absent for k2, v in remove_knowledge(entries, k, 5).items()} == {k2: v.absent for k2, v in cond.items()}


def test_broken_submission_reports_every_problem(entries, tmp_path):
    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    head = {"kalma": {"kind": "answers", "format_version": 1, "submission": {"name": "x", "model": "m", "seed": 0, "settings": {}}}}
    good = [json.dumps({"entry_id": e.id, "text": "Born in Rome [Q1, x: ].", "model": "m"}) for e in entries[:-1]]
    lines = [json.dumps(head), good[0], '{"entry_id": ', json.dumps({"entry_id": "nope", "text": "t", "model": "m"})] + good[1:-1]
    (tmp_path / "s.jsonl").write_text("\n".join(lines) + "\n")
    checked = validate(tmp_path / "s.jsonl", entries)
    text = "\n".join(checked.problems)
    assert "s.jsonl:3: invalid JSON" in text
    assert "s.jsonl:4: field 'entry_id': unknown entry id 'nope'" in text
    assert f"missing answers for 2 of {len(entries)} entries: {entries[-2].id}, {entries[-1].id}; file the answers you have with --partial" in text
    with pytest.raises(SubmissionError) as ei:
        submit(tmp_path / "s.jsonl", tmp_path / "d.jsonl", tmp_path / "board", EvalOptions(), ["citation"])
    assert len(ei.value.problems) == 3


def test_malformed_citations_are_scored_not_rejected_and_seeds_may_share_a_file(entries, tmp_path):
    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    head = {"kalma": {"kind": "answers", "format_version": 2, "submission": {"name": "two-seeds", "model": "m", "seed": 0, "settings": {}}}}
    rows = [json.dumps({"entry_id": e.id, "text": "Born in Rome [Q1, x: ].", "model": "m", "run": f"s{seed}"}) for seed in (0, 1) for e in entries]
    (tmp_path / "s.jsonl").write_text("\n".join([json.dumps(head)] + rows) + "\n")
    rec = submit(tmp_path / "s.jsonl", tmp_path / "d.jsonl", tmp_path / "board", EvalOptions(), ["citation"])
    assert rec.malformed_citations == 2 * len(entries) and rec.summary.malformed == {"empty_value": 2 * len(entries)}
    assert rec.answers_scored == 2 * len(entries) and rec.submission.seeds == [0]


@pytest.fixture(scope="module")
def board(tmp_path_factory, entries):
    """A bench run with every experiment (template backend) and two filed submissions."""
    d = tmp_path_factory.mktemp("board")
    cfg = BenchConfig.model_validate(
        {
            "name": "t",
            "llms": ["template"],
            "seeds": [0, 1],
            "experiments": {"main": {}, "knowledge_removal": {"k": [0, 1, 2, 3]}, "retrieval": {}, "settings": {}},
        }
    )
    results = Bench(cfg, d / "runs" / "t", progress=False).run()
    for seed in (0, 1):
        row = next(r for r in results.results if r.experiment == "main" and r.seed == seed)
        meta = SubmissionMeta(name=f"template-s{seed}", model="template", seeds=[seed], settings={"temperature": 0.0})
        sub = as_submission(d / "runs" / "t" / row.answers_file, d / f"sub{seed}.jsonl", meta)
        submit(sub, d / "runs" / "t" / "dataset.jsonl", d, EvalOptions(), ["citation", "alignment", "na"], dataset_name="demo")
    return d, results, cfg


def test_bench_run_is_traceable_and_resumes(board):
    d, results, cfg = board
    assert {r.experiment for r in results.results} == {"main", "knowledge_removal", "retrieval", "settings"}
    for r in results.results:
        assert (d / "runs" / "t" / r.answers_file).exists() and (d / "runs" / "t" / r.eval_dir / "summary.json").exists()
    main = results.tables["main"][0]
    assert main.seeds == [0, 1] and main.values["citation.f1_micro"].std == 0.0 and main.answers == 6  # template is deterministic
    f1 = main.values["citation.f1_micro"]
    assert f1.low is not None and f1.high is not None and f1.low < f1.high  # the questions' sampling, which the seeds' spread (0) does not show
    # the interval surrounds the statistic the table shows: the mean over seeds, F1 from the mean P and R
    found = Bench(cfg, d / "runs" / "t", progress=False).seed_intervals([r for r in results.results if r.experiment == "main"])
    assert {k: i.point for k, i in found.items() if i.point is not None} == {
        k: pytest.approx(v.mean) for k, v in main.values.items() if v is not None and v.mean is not None
    }
    assert "[" in cell("citation.f1_micro", f1) and "95% interval over the dataset's entries" in results.tables_note
    removal = {r.condition: r.values["citation.recall_micro"].mean for r in results.tables["knowledge_removal"]}
    assert removal["k=0"] > removal["k=1"] > removal["k=2"] > removal["k=3"]
    assert results.dataset.entries == 6 and results.dataset.name == "kalma demo"
    files = sorted((d / "runs" / "t" / "answers").glob("*.jsonl"))
    before = {f: f.read_text() for f in files}
    rerun = Bench(cfg, d / "runs" / "t", progress=False).run()  # a rerun resumes: nothing new is written
    assert {f: f.read_text() for f in files} == before
    assert rerun.tables == results.tables


def test_bench_cli_rejects_unknown_keys(tmp_path):
    from kalma.cli import main

    (tmp_path / "c.toml").write_text('name = "x"\nllm = "oops"\n')
    res = CliRunner().invoke(main, ["bench", "run", str(tmp_path / "c.toml"), "-o", str(tmp_path / "r")])
    assert res.exit_code != 0 and "unknown key 'llm'" in res.output


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (.ci/run installs it)")
def test_leaderboard_in_a_real_browser(board, tmp_path):
    d, _, _ = board
    page, damaged = render(d, tmp_path / "site")
    assert damaged == []
    assert (tmp_path / "site" / "leaderboard.md").exists() and (tmp_path / "site" / "leaderboard.csv").exists()
    svgs = sorted(p.name for p in (tmp_path / "site").glob("*.svg"))
    assert svgs == ["t-knowledge_removal.svg", "t-retrieval.svg"]
    dom = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert 'data-images="2"' in dom and 'data-images-loaded="2"' in dom and "data-image-errors" not in dom  # both plots loaded
    for name in ("template-s0", "template-s1", "GPT-4 (0.5)", "ChatGPT (0.5)", "LLaMA-7B"):
        assert f">{name}" in dom
    assert dom.count('class="reference"') == 3 and dom.count('class="submission"') == 2
    assert dom.count('class="tests"') == 1 and dom.count('<span class="ci">') >= 8  # the pair's test, and every submission figure's interval
    assert '<td class="tie">1-2 =</td>' in dom  # two seeds of one deterministic system: no test tells them apart
    shot = ROOT / "runs" / "test-artifacts" / "leaderboard.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile2'}", "--window-size=1400,1500", f"--screenshot={shot}", page.as_uri()],
        capture_output=True,
        timeout=120,
    )
    assert shot.exists() and shot.stat().st_size > 20000


def test_a_bench_config_sets_metric_options_by_spec(tmp_path):
    """Any option of any metric from the TOML file: the [NA] relevance rule off here changes
    [NA] precision exactly where the ablation left irrelevant [NA] sentences; a misspelt option
    is an error naming it."""
    toml = """
name = "opts"
metrics = ["citation", "na:relevance=false,verbalized=true"]
[experiments.knowledge_removal]
llms = ["template"]
k = [2]
"""
    (tmp_path / "b.toml").write_text(toml)
    out = Bench(BenchConfig.load(tmp_path / "b.toml"), tmp_path / "run", progress=False).run()
    row = out.results[0]
    assert set(row.metrics) == {"citation", "na"} and row.metrics["na"]["na_recall_micro"] is not None
    eval_cfg = json.loads((tmp_path / "run" / row.eval_dir / "summary.json").read_text())["provenance"]["config"]
    assert eval_cfg["metrics"] == ["citation", "na:relevance=false,verbalized=true"]
    (tmp_path / "bad.toml").write_text(toml.replace("relevance=false", "relevanse=false"))
    from kalma.errors import ConfigError

    with pytest.raises(ConfigError, match="relevanse"):
        Bench(BenchConfig.load(tmp_path / "bad.toml"), tmp_path / "run2", progress=False).run()


def test_a_submission_whose_answers_hold_reasoning_is_refused_with_the_line(entries, tmp_path):
    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    meta = {"name": "r1", "model": "m", "seed": 0, "settings": {}}
    texts = ["<think>Rome? [Q212657, place of birth: Rome]</think>\nBorn in Rome [NA]."] + ["x [NA]."] * (len(entries) - 1)
    write_jsonl(tmp_path / "s.jsonl", [Answer(entry_id=e.id, text=t, model="m") for e, t in zip(entries, texts)], "answers", header={"submission": meta})
    checked = validate(tmp_path / "s.jsonl", entries)
    assert checked.problems == [
        f"{tmp_path / 's.jsonl'}:2: field 'text': opens with a model's reasoning (<think>…); it is scored as written: move it to meta.reasoning"
    ]


def test_a_resubmission_that_fails_to_score_leaves_the_filed_entry_whole(entries, tmp_path):
    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    meta = {"name": "keep-me", "model": "m", "seed": 0, "settings": {}}
    write_jsonl(tmp_path / "s.jsonl", [Answer(entry_id=e.id, text="Born in Rome [NA].", model="m") for e in entries], "answers", header={"submission": meta})
    first = submit(tmp_path / "s.jsonl", tmp_path / "d.jsonl", tmp_path / "board", EvalOptions(), ["citation", "na"])
    filed = tmp_path / "board" / "submissions" / "keep-me"
    before = {p.relative_to(filed): p.read_bytes() for p in filed.rglob("*") if p.is_file()}
    with pytest.raises(BackendError, match="cannot load the model"):  # the entailment model fails only once scoring starts
        submit(tmp_path / "s.jsonl", tmp_path / "d.jsonl", tmp_path / "board", EvalOptions(nli=f"hf-nli:{tmp_path}/no-model"), ["alignment"])
    assert {p.relative_to(filed): p.read_bytes() for p in filed.rglob("*") if p.is_file()} == before
    assert [r.name for t in collect(tmp_path / "board").tables for r in t.rows if not r.reference] == ["keep-me"]  # the staging folder is not on the board
    filed.rename(filed.with_name(".keep-me.replaced"))  # as if killed between the two renames of a swap
    again = submit(tmp_path / "s.jsonl", tmp_path / "d.jsonl", tmp_path / "board", EvalOptions(), ["citation"])
    assert again.replaces is not None and (again.replaces.filed, again.replaces.answers_sha256) == (first.filed, first.answers_sha256)
    assert sorted(p.name for p in (tmp_path / "board" / "submissions").iterdir() if p.is_dir()) == ["keep-me"]  # no staging left
    assert list(again.summary.metrics) == ["citation"]


def test_bench_submit_cli_takes_metric_options_and_names_the_models(entries, tmp_path):
    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    meta = {"name": "cli", "model": "m", "seed": 0, "settings": {}}
    write_jsonl(tmp_path / "s.jsonl", [Answer(entry_id=e.id, text="Born in Rome [NA].", model="m") for e in entries], "answers", header={"submission": meta})
    args = ["bench", "submit", str(tmp_path / "s.jsonl"), "--dataset", str(tmp_path / "d.jsonl"), "--leaderboard", str(tmp_path / "b")]
    res = CliRunner().invoke(main, [*args, "--metric", "citation", "--metric", "na:relevance=false"])
    assert res.exit_code == 0, res.output
    assert "| na.na_recall_micro |" in res.output and "| citation.f1_micro |" in res.output
    assert "- na: lexical (rule-based approximation" in res.output  # every number printed with the model behind it
    rec = json.loads((tmp_path / "b" / "submissions" / "cli" / "submission.json").read_text())
    assert rec["summary"]["provenance"]["config"]["metrics"] == ["citation", "na:relevance=false"]
