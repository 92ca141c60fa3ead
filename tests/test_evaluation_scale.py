"""At the size of BioKaLMA (1,085 answers): a real kill mid-run, then resume, equals an
uninterrupted run. Needs ../shared/data/biokalma (skips without it)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from bench.synthetic import synthetic_answers
from kalma.biokalma import release_entries
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
    return [sys.executable, "-m", "kalma.cli", "evaluate", "--dataset", str(d / "dataset.jsonl"), "--answers", str(d / "answers.jsonl"),
            "--metrics", "citation,alignment,na", "--nli", "lexical", "-o", str(out)]


def test_kill_and_resume_gives_the_same_summary(files, tmp_path):
    full = subprocess.run(_cmd(files, tmp_path / "full"), capture_output=True, text=True)
    assert full.returncode == 0, full.stderr
    part = tmp_path / "part"
    proc = subprocess.Popen(_cmd(files, part), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**__import__("os").environ, "KALMA_CACHE": "off"})
    scores = part / "scores.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and (not scores.exists() or scores.read_text().count("\n") < 300):
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    written = scores.read_text().count("\n") - 1
    assert 0 < written < 1085, written  # really killed halfway
    resumed = subprocess.run(_cmd(files, part), capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    a = json.loads((tmp_path / "full" / "summary.json").read_text())
    b = json.loads((part / "summary.json").read_text())
    assert a["metrics"] == b["metrics"] and a["counts"] == b["counts"] and a["dropped"] == b["dropped"]
    ids = [json.loads(l)["answer_id"] for l in scores.read_text().splitlines()[1:]]
    assert len(ids) == len(set(ids)) == 1085  # no row lost or doubled
    assert b["metrics"]["precision_micro"] is None and 0 < b["metrics"]["correctness_micro"] < 1
