"""At the size of BioKaLMA (1,085 answers): a real kill mid-run, then resume, equals an
uninterrupted run. Needs ../shared/data/biokalma (skips without it)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from bench.synthetic import synthetic_answers
from kalma.biokalma import release_entries
from kalma.cli import main
from kalma.jsonl import write_jsonl

pytestmark = pytest.mark.shared


@pytest.fixture(scope="module")
def files(biokalma_dir, tmp_path_factory):
    d = tmp_path_factory.mktemp("scale")
    entries = release_entries(biokalma_dir / "complex_question_graph.json", biokalma_dir / "simple_question_graph.json")
    write_jsonl(d / "dataset.jsonl", entries, "dataset")
    write_jsonl(d / "answers.jsonl", synthetic_answers(entries, seed=7), "answers")
    return d


def _cmd(d, out):
    return [
        sys.executable,
        "-m",
        "kalma.cli",
        "evaluate",
        "--dataset",
        str(d / "dataset.jsonl"),
        "--answers",
        str(d / "answers.jsonl"),
        "--metrics",
        "citation,alignment,na",
        "--nli",
        "lexical",
        "-o",
        str(out),
    ]


def _in_process(cmd: list[str]) -> None:
    """The command in this process (`_cmd` without `python -m kalma.cli`): only the killed run
    needs a process of its own; the others save a start-up (0.8 s CPU) each."""
    res = CliRunner().invoke(main, cmd[3:])
    assert res.exit_code == 0, res.output


def test_kill_and_resume_gives_the_same_summary(files, tmp_path):
    _in_process(_cmd(files, tmp_path / "full"))
    part = tmp_path / "part"
    proc = subprocess.Popen(_cmd(files, part), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**__import__("os").environ, "KALMA_CACHE": "off"})
    scores = part / "scores.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and (not scores.exists() or scores.read_text().count("\n") < 300):
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    written = scores.read_text().count("\n") - 1
    assert 0 < written < 1085, written  # really killed halfway
    _in_process(_cmd(files, part))
    a = json.loads((tmp_path / "full" / "summary.json").read_text())
    b = json.loads((part / "summary.json").read_text())
    assert a["metrics"] == b["metrics"] and a["counts"] == b["counts"] and a["dropped"] == b["dropped"]
    ids = [json.loads(line)["answer_id"] for line in scores.read_text().splitlines()[1:]]
    assert len(ids) == len(set(ids)) == 1085  # no row lost or doubled
    assert b["metrics"]["citation"]["precision_micro"] is None and 0 < b["metrics"]["citation"]["correctness_micro"] < 1


def test_paper_style_answers_over_the_release_are_scored_exactly(biokalma_dir, tmp_path):
    """Issue 13's scenario at full scale: answers in the paper's markup (qid: prefixes, name
    pairs, release keys and Wikidata labels for one property, unknown labels, wrong values)
    over `dataset import-biokalma` output. Every citation is read as written and the micro
    figures equal the truth exactly; a seeded minimum set makes precision and recall checkable."""
    import random

    from bench.synthetic import paper_style_answers
    from evaluation.runner import evaluate

    entries = release_entries(biokalma_dir / "complex_question_graph.json", biokalma_dir / "simple_question_graph.json")
    rng = random.Random(11)
    # an entry whose release graphs hold no fact gets no minimum set (an empty one is no entry)
    entries = [e.model_copy(update={"minimum_set": rng.sample(e.knowledge_pool.triples(), min(4, len(e.knowledge_pool.triples()))) or None}) for e in entries]
    cases = paper_style_answers(entries, seed=3)
    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    write_jsonl(tmp_path / "a.jsonl", [a for a, _ in cases], "answers")
    s = evaluate(tmp_path / "d.jsonl", tmp_path / "a.jsonl", tmp_path / "out", metrics=["citation"], progress=False)

    from kalma.properties import Vocabulary

    n = correct = precise = recalled = minimum = 0
    for e, (_answer, truth) in zip(entries, cases):
        v = Vocabulary.of(e.knowledge_pool)
        mins = {v.triple_key(t) for t in e.minimum_set or []}
        keys = [v.citation_key(c.qid, c.relation, c.value) for c, _ in truth]
        n += len(truth)
        correct += sum(ok for _, ok in truth)
        precise += sum(ok and k in mins for k, (_, ok) in zip(keys, truth))
        recalled += len({k for k, (_, ok) in zip(keys, truth) if ok and k in mins})
        minimum += len(mins)
    assert s.counts["malformed"] == 0 and s.counts["citations"] == n
    assert s.counts["correct_citations"] == correct
    assert s.value("citation.correctness_micro") == pytest.approx(correct / n, abs=1e-12)
    assert s.value("citation.precision_micro") == pytest.approx(precise / n, abs=1e-12)
    assert s.value("citation.recall_micro") == pytest.approx(recalled / minimum, abs=1e-12)
