"""First contact, eighth pass (issue 59), through the CLI as a user runs it: a server that starts
a moment late is waited for, an interrupted evaluation never describes what it does not hold,
`kalma compare` on few entries says what it can and cannot show, the leaderboard page fits a
screen, nested brackets count once, an answer that dominates the citations is named, and the
smaller things a new user met."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from click.testing import CliRunner

from kalma.cli import main
from kalma.jsonl import read_jsonl, write_jsonl
from kalma.models.template import TemplateLLM
from kalma.schema import Answer, DatasetEntry
from tests.conftest import ROOT
from tests.e2e.test_bench import CHROMIUM, FLAGS
from tests.e2e.test_builder_publishable import RECORDS
from tests.servers import answering, free_port, scripted_server
from tests.terminal import sigint_default


def _run(args: list[str]) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, args)
    return res.exit_code, res.stdout, res.stderr


def _ok(args: list[str]) -> tuple[str, str]:
    code, out, err = _run(args)
    assert code == 0, out + err
    return out, err


def _fails(args: list[str], *said: str) -> str:
    """A user's mistake: one line on stderr (after any note), a non-zero exit, no traceback."""
    code, out, err = _run(args)
    *notes, last = [ln for ln in err.splitlines() if ln.strip()] or [""]
    assert code != 0 and "Traceback" not in err and last.startswith("kalma: ") and all(n.startswith("note: ") for n in notes), out + err
    for s in said:
        assert s in err, err
    return err


# ---------------------------------------------------------------- 3: a server that starts late


@contextmanager
def _late_server(delay: float) -> Iterator[str]:
    """An OpenAI-compatible server on 127.0.0.1 that starts listening `delay` seconds from now."""
    port, done = free_port(), threading.Event()

    def serve() -> None:
        time.sleep(delay)
        with scripted_server([answering(TemplateLLM().respond)], models=[{"id": "m", "root": "m"}], port=port):
            done.wait()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        done.set()
        t.join()


def test_a_server_that_starts_late_is_named_at_once_and_waited_for(dataset, tmp_path):
    with _late_server(1.2) as url:
        out, err = _ok(["answer", "--dataset", str(dataset), "--llm", f"openai-compatible:{url}:m", "--retrieval", "gold", "-o", str(tmp_path / "a.jsonl")])
    notes = [ln for ln in err.splitlines() if ln.startswith("note: ")]
    assert f"nothing answers at {url} (connection refused); waiting up to 30 s" in notes[0], err
    assert any(f"{url} answered at attempt" in n for n in notes), err
    assert json.loads(out)["written"] == 6


def test_a_server_that_never_starts_is_given_up_after_the_wait_said(dataset, tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"
    began = time.monotonic()
    err = _fails(["answer", "--dataset", str(dataset), "--llm", f"openai-compatible:{url}:m,wait=2", "-o", str(tmp_path / "a.jsonl")])
    took = time.monotonic() - began
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert "waiting up to 2 s" in lines[0] and any("attempt 2: still refused" in ln for ln in lines), err
    assert f"nothing answers at {url} (connection refused for 2 s," in lines[-1] and "attempts); is the server running?" in lines[-1], err
    # the wait's own clock, as each attempt says it: the command's time adds imports and reading
    # the dataset, seconds more on a loaded machine
    waited = [float(x) for x in re.findall(r"still refused after ([0-9.]+) s of 2", err)]
    assert waited and max(waited) <= 2.5 and 2 <= took < 10, (took, err)
    assert not (tmp_path / "a.jsonl").exists()


def test_ctrl_c_stops_the_wait_for_a_server(dataset, tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"
    cmd = [sys.executable, "-m", "kalma.cli", "answer", "--dataset", str(dataset), "--llm", f"openai-compatible:{url}:m", "-o", str(tmp_path / "a.jsonl")]
    run = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, preexec_fn=sigint_default)
    assert run.stderr is not None
    first = run.stderr.readline()  # said at once, before any wait
    assert "waiting up to 30 s" in first and "Ctrl-C stops" in first, first
    run.send_signal(signal.SIGINT)
    rest = run.stderr.read()
    assert run.wait(timeout=20) == 130 and f"kalma: interrupted while waiting for {url}" in rest and "Traceback" not in rest, rest


def test_a_scorer_spec_takes_the_wait_too(tmp_path):
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    url = f"http://127.0.0.1:{free_port()}/v1"
    _fails(["build", "--records", str(tmp_path / "r.jsonl"), "--lm", f"openai-compatible:{url}:m,wait=0.5", "-o", str(tmp_path / "d.jsonl")], "for 0.5 s")


# ---------------------------------------------------------------- 5.1: an interrupted --overwrite


@pytest.fixture(scope="module")
def answered(dataset, tmp_path_factory) -> Path:
    """The demo dataset answered by the offline template backend, citing its knowledge pools."""
    out = tmp_path_factory.mktemp("answered") / "a.jsonl"
    _ok(["answer", "--dataset", str(dataset), "--llm", "template", "--retrieval", "gold", "-o", str(out)])
    return out


def test_an_interrupted_overwrite_leaves_no_other_systems_summary(dataset, answered, tmp_path):
    """A scored into a folder, then B into it with --overwrite, stopped by Ctrl-C while its judge
    thinks: A's summary, table and page are gone and the folder says it is unfinished."""
    out = tmp_path / "eval"
    _ok(["evaluate", "--dataset", str(dataset), "--answers", str(answered), "--metrics", "citation", "--resamples", "0", "-o", str(out)])
    assert json.loads((out / "summary.json").read_text())["finished"] is True and (out / "verdicts.html").exists()
    release = threading.Event()

    def thinking(h: BaseHTTPRequestHandler, body: bytes) -> None:
        release.wait(60)
        answering(lambda _: "Yes")(h, body)

    with scripted_server([thinking], models=[{"id": "m", "root": "m"}]) as (url, log):
        cmd = [sys.executable, "-m", "kalma.cli", "evaluate", "--dataset", str(dataset), "--answers", str(answered), "--metrics", "alignment"]
        cmd += ["--nli", f"llm:openai-compatible:{url}/v1:m", "--resamples", "0", "--overwrite", "-o", str(out)]
        run = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env={**os.environ, "KALMA_CACHE": "off"}, preexec_fn=sigint_default)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not log and run.poll() is None:  # B's judge asked: B is running
            time.sleep(0.05)
        run.send_signal(signal.SIGINT)
        release.set()
        _, err = run.communicate(timeout=60)
    assert run.returncode == 130 and "Traceback" not in err, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["finished"] is False and summary["to_score"] == 6 and summary["metrics"] == {}, summary
    assert "UNFINISHED" in (out / "summary.md").read_text() and not (out / "verdicts.html").exists()
    assert not (out / "scores.jsonl").exists()  # stopped before B's first row: no rows kept, none of A's either


def test_compare_names_an_unfinished_evaluation_and_the_leaderboard_sets_it_aside(dataset, answered, tmp_path):
    from evaluation.runner import evaluate

    evaluate(dataset, answered, tmp_path / "stopped", metrics=["citation"], progress=False, stop_after=2, chunk_size=1, resamples=0)
    assert json.loads((tmp_path / "stopped" / "summary.json").read_text())["finished"] is False
    _ok(["evaluate", "--dataset", str(dataset), "--answers", str(answered), "--metrics", "citation", "--resamples", "0", "-o", str(tmp_path / "whole")])
    out, _ = _ok(["compare", str(tmp_path / "stopped"), str(tmp_path / "whole"), "--resamples", "100"])
    assert "A's evaluation is UNFINISHED (2 of 6 answers scored)" in out, out
    # the same evaluation's scores, stopped before its summary was rewritten: the summary's word is read too
    (tmp_path / "whole" / "summary.json").write_text(json.dumps({**json.loads((tmp_path / "whole" / "summary.json").read_text()), "finished": False}))
    out, _ = _ok(["compare", str(tmp_path / "stopped"), str(tmp_path / "whole"), "--resamples", "100"])
    assert "B's evaluation is UNFINISHED (6 answers scored, its summary says it did not finish)" in out, out

    board = tmp_path / "board"
    args = ["bench", "submit", str(answered), "--dataset", str(dataset), "--leaderboard", str(board), "--metrics", "citation"]
    for name in ("one", "two"):
        _ok([*args, "--name", name, "--model", name])
    filed = board / "submissions" / "two" / "submission.json"
    record = json.loads(filed.read_text())
    record["summary"]["finished"] = False
    filed.write_text(json.dumps(record))
    err = _fails(["leaderboard", str(board), "-o", str(tmp_path / "site")], f"left off the page: {filed}: its evaluation is unfinished")
    page = (tmp_path / "site" / "index.html").read_text()
    assert ">two<" not in page and ">one<" in page and "its evaluation is unfinished" in page, err
    assert "kalma demo questions (hand-written) (6 questions" in page  # §5.9: dataset.jsonl names no dataset; its entries' source does


# ---------------------------------------------------------------- 5.6, 5.7: doubled brackets, a dominant answer


@pytest.fixture(scope="module")
def hostile(dataset, tmp_path_factory) -> Path:
    """Answers to the demo entries: one citation in doubled brackets, one wrapped 10,000 deep, one
    answer repeating its correct citation 200 times, the rest a plain correct citation; scored."""
    work = tmp_path_factory.mktemp("hostile")
    entries = list(read_jsonl(dataset, DatasetEntry))
    cites = [f"{t.subject}, {t.relation_label}: {t.value_label}" for t in (e.knowledge_pool.triples()[0] for e in entries)]
    texts = [f"He was one. [[{cites[0]}]]", "She was one. " + "[" * 10_000 + cites[1] + "]" * 10_000, f"It was so. [{cites[2]}]" * 200]
    texts += [f"It was so. [{c}]" for c in cites[3:]]
    write_jsonl(work / "a.jsonl", [Answer(entry_id=e.id, text=t, model="m") for e, t in zip(entries, texts)], "answers")
    _ok(["evaluate", "--dataset", str(dataset), "--answers", str(work / "a.jsonl"), "--metrics", "citation", "--resamples", "0", "-o", str(work / "e")])
    return work


def test_doubled_brackets_are_closed_and_nested_counts_once_however_deep(hostile):
    summary = json.loads((hostile / "e" / "summary.json").read_text())
    assert summary["malformed"] == {"nested": 2}, summary["malformed"]  # not 9,999 unclosed and 9,999 unopened
    assert summary["counts"]["citations"] == summary["counts"]["correct_citations"] == 2 + 200 + 3


def test_an_answer_holding_most_citations_is_named_first(hostile):
    table = (hostile / "e" / "summary.md").read_text()
    first = table.split("Read first:", 1)[1]
    dominant = [ln for ln in first.splitlines() if "holds 200 of the 205 citations (98%)" in ln]
    assert len(dominant) == 1 and "micro figures" in dominant[0] and "A citation written again counts again" in dominant[0], first
    assert "holds 1 of" not in first  # the others hold an even share


# ---------------------------------------------------------------- 5.3: compare on few entries


def test_compare_on_few_entries_says_what_the_test_and_the_interval_can_show(dataset, hostile, tmp_path):
    """B cites a wrong value where A is right on 5 of the 6 entries: the interval excludes 0, the
    test cannot reach 0.05, and the report says why; a figure with no value says why too."""
    entries = list(read_jsonl(dataset, DatasetEntry))
    wrong = [
        Answer(entry_id=e.id, text=f"It was so. [{t.subject}, {t.relation_label}: nobody]", model="b")
        for e, t in ((e, e.knowledge_pool.triples()[0]) for e in entries)
    ]
    right = [
        Answer(entry_id=e.id, text=f"It was so. [{t.subject}, {t.relation_label}: {t.value_label}]", model="a")
        for e, t in ((e, e.knowledge_pool.triples()[0]) for e in entries)
    ]
    write_jsonl(tmp_path / "a.jsonl", right, "answers")
    write_jsonl(tmp_path / "b.jsonl", [*wrong[:5], right[5]], "answers")
    for side in "ab":
        _ok(
            [
                "evaluate",
                "--dataset",
                str(dataset),
                "--answers",
                str(tmp_path / f"{side}.jsonl"),
                "--metrics",
                "citation,na",
                "--resamples",
                "0",
                "-o",
                str(tmp_path / side),
            ]
        )
    out, _ = _ok(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--resamples", "2000"])
    line = next(ln for ln in out.splitlines() if ln.startswith("| citation.correctness_micro |"))
    low = float(line.split("|")[5].strip(" [").split(",")[0])
    assert low > 0, line  # the interval excludes 0...
    assert (
        "A and B differ on 5 of 6 entries; swapping those 5 gives 32 outcomes in mirrored pairs, so the smallest two-sided p the test can reach is 0.0625"
        in out
    )
    assert "Over only 6 entries the bootstrap interval is unreliable" in out
    na = [ln for ln in out.splitlines() if ln.startswith("- na.na_precision_micro: n/a in A and B: no sentence is marked [NA]")]
    assert na, out  # no answer has an absent set: [NA] figures are n/a on both sides, with the reason summary.md gives
    page = (tmp_path / "a" / "verdicts.html").read_text()
    assert "<code>absent</code>" in page and "`absent`" not in page  # §5.9: a report's code spans, not raw backticks
    code, js, _ = _run(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--resamples", "200", "--json"])
    figure = json.loads(js)["citation.correctness_micro"]
    assert figure["differing_entries"] == 5 and figure["smallest_p"] == 0.0625


# ---------------------------------------------------------------- 5.8: harness samples, and the knowledge they were given


def test_harness_samples_are_scored_as_given_the_pool_their_documents_hold(dataset, tmp_path):
    """No "give each line its `kg`" note for lm-evaluation-harness samples: a sample has no line of
    the user's, and its document holds the entry's whole pool, which is what it is scored against."""
    from evaluation.harness import documents

    entries = list(read_jsonl(dataset, DatasetEntry))
    docs = documents(entries, "specific")
    samples = tmp_path / "samples_kalma_specific_2026-11-28T00-00-00.jsonl"
    samples.write_text("".join(json.dumps({"doc_id": i, "doc": d, "filtered_resps": ["It was so [NA]."]}) + "\n" for i, d in enumerate(docs)))
    _ok(
        [
            "evaluate",
            "--dataset",
            str(dataset),
            "--answers",
            str(samples),
            "--model",
            "m",
            "--metrics",
            "citation,na",
            "--resamples",
            "0",
            "-o",
            str(tmp_path / "e"),
        ]
    )
    summary = json.loads((tmp_path / "e" / "summary.json").read_text())
    assert not [c for c in summary["caveats"] if "full knowledge pool" in c or "`kg`" in c], summary["caveats"]
    assert summary["metrics"]["na"]["na_precision_micro"] is not None  # the absent sets follow from the pool: [NA] is scored
    assert "pretrained=$SMOL" in (ROOT / "docs" / "harness.md").read_text()  # the offline route, documented


# ---------------------------------------------------------------- 5.9: smaller things


def test_answer_says_a_csv_dataset_is_one_and_evaluate_help_lists_every_entailment_backend(tmp_path):
    (tmp_path / "d.csv").write_text("id,question\ne1,Who?\n")
    _fails(
        ["answer", "--dataset", str(tmp_path / "d.csv"), "--llm", "template", "-o", str(tmp_path / "a.jsonl")],
        "d.csv:1: this is a CSV file (columns: id, question)",
    )
    out, _ = _ok(["evaluate", "--help"])
    said = " ".join(out.split())
    assert all(f"{name}:…" in said for name in ("minicheck-t5", "minicheck", "factcg", "alignscore", "hhem", "served-judge", "hf-nli", "llm", "table")), said


# ---------------------------------------------------------------- 5.5: the leaderboard page on a screen

PROBE = """<script>window.addEventListener("load", () => {
  const b = document.body, wide = [...document.querySelectorAll(".wide")];
  b.dataset.overflow = String(Math.max(document.documentElement.scrollWidth, ...wide.map(w => w.scrollWidth)) - window.innerWidth);
  b.dataset.readFirst = String(Math.max(...[...document.querySelectorAll(".read-first")].map(e => e.getBoundingClientRect().right)));
  b.dataset.rowHeight = String(Math.max(...[...document.querySelectorAll("table.board tbody tr")].map(r => r.getBoundingClientRect().height)));
});</script></body>"""


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (.ci/run installs it)")
def test_the_leaderboard_fits_1400_and_1920_pixels_and_keeps_what_to_read_first(dataset, answered, tmp_path):
    board = tmp_path / "board"
    entries = list(read_jsonl(dataset, DatasetEntry))
    write_jsonl(tmp_path / "bare.jsonl", [Answer(entry_id=e.id, text="It was so [NA].", model="bare") for e in entries], "answers")
    args = ["bench", "submit", "--dataset", str(dataset), "--leaderboard", str(board), "--metrics", "citation,alignment,na"]
    for i in range(4):
        _ok([*args, str(answered), "--name", f"template-{i}", "--model", "organisation/a-rather-long-model-name-7b-instruct"])
    _ok([*args, str(tmp_path / "bare.jsonl"), "--name", "bare", "--model", "bare"])
    _ok(["leaderboard", str(board), "-o", str(tmp_path / "site")])
    page = (tmp_path / "site" / "index.html").read_text()
    assert page.count('<p class="backends"><b>Backends per metric</b>, the same for every row: ') == 2  # once per table (ours, the paper's)
    assert "<th>Backends per metric</th>" not in page
    probe = tmp_path / "site" / "probe.html"
    probe.write_text(page.replace("</body>", PROBE, 1))
    for width in (1400, 1920):
        dom = subprocess.run(
            [
                CHROMIUM,
                *FLAGS,
                f"--user-data-dir={tmp_path / f'p{width}'}",
                f"--window-size={width},1200",
                "--virtual-time-budget=3000",
                "--dump-dom",
                probe.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
        seen = {k: float(re.search(rf'data-{k}="([-\d.]+)"', dom).group(1)) for k in ("overflow", "read-first", "row-height")}  # type: ignore[union-attr]
        assert seen["overflow"] <= 0 and 0 < seen["read-first"] <= width and seen["row-height"] < 150, (width, seen)
    assert "scored as given the dataset&#x27;s full knowledge pool" in page  # why bare's [NA] precision is what it is
