"""Hardening of files (issue 14, items 1, 2, 4, 10): stale outputs, concurrent writers, bad
lines, damaged headers and a damaged cache."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from dataset_builder.demo import demo_entries
from evaluation.runner import evaluate
from kalma.cache import Cache, CacheError
from kalma.errors import OutputLocked, ResumeMismatch
from kalma.jsonl import JsonlWriter, RecordError, read_jsonl, write_jsonl
from kalma.kg import open_source
from kalma.schema import FORMAT_VERSION, Answer
from tests.servers import reply, scripted_server

HEAD = json.dumps({"kalma": {"kind": "answers", "format_version": 2}})


@pytest.fixture(scope="module")
def entries():
    return demo_entries(open_source("demo"))


def _good(i: int) -> str:
    return Answer(entry_id=f"e{i}", text="x", model="m").model_dump_json()


# ---------------------------------------------------------------- a byte order mark is not content

BOM = "\ufeff"


def _read_every_kind(d):
    """What each reader makes of the user files in `d`: answers JSONL (header and rows), records
    CSV and JSONL, a bench TOML, a release JSON and an entailment table."""
    from bench.experiments import BenchConfig
    from dataset_builder.records import read_records
    from kalma.biokalma import read_release_raw
    from kalma.models.table import TableEntailment

    answers = read_jsonl(d / "a.jsonl", Answer, kind="answers")
    return (
        answers.header,
        [a.entry_id for a in answers.records],
        read_records(d / "r.csv").records,
        read_records(d / "r.jsonl").records,
        BenchConfig.load(d / "c.toml").name,
        read_release_raw(d / "release.json"),
        TableEntailment(d / "t.jsonl").table,
    )


def test_a_byte_order_mark_is_read_past_by_every_reader(tmp_path):
    files = {
        "a.jsonl": HEAD + "\n" + _good(1) + "\n",
        "r.csv": "paragraph,person_a,relation,person_b\nA was the father of B.,Orazio Gentileschi,father,Artemisia Gentileschi\n",
        "r.jsonl": json.dumps({"paragraph": "p", "person_a": "Orazio Gentileschi", "relation": "father", "person_b": "Artemisia Gentileschi"}) + "\n",
        "c.toml": 'name = "bom"\n[experiments.main]\n',
        "release.json": json.dumps([["Q?", [{"qid": "Q1", "name": "A", "occupation": "painter"}]]]),
        "t.jsonl": json.dumps({"premise": "p", "hypothesis": "h", "label": "entailment"}) + "\n",
    }
    plain, marked = tmp_path / "plain", tmp_path / "bom"
    for d, prefix in ((plain, ""), (marked, BOM)):
        d.mkdir()
        for name, text in files.items():
            (d / name).write_text(prefix + text, encoding="utf-8")
    read = _read_every_kind(plain)
    assert read[0] == {"kind": "answers", "format_version": 2} and read[1] == ["e1"] and read[2] and read[3]
    assert _read_every_kind(marked) == read


# ---------------------------------------------------------------- one bad line never costs the file


@pytest.mark.parametrize(
    "bad,message",
    [
        (b'{"entry_id": "e9", "text": "caf\xe9", "model": "m"}', "not valid UTF-8 (byte 0xe9 at column 32)"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"entry_id": "e9", "text": "\\ud800", "model": "m"}', "lone surrogate"),
        (b'{"entry_id": "e9", "text": ' + b"9" * 5000 + b', "model": "m"}', "invalid JSON"),
    ],
)
def test_a_bad_line_is_one_error_and_every_good_line_is_kept(tmp_path, bad, message):
    p = tmp_path / "a.jsonl"
    p.write_bytes(b"\n".join([HEAD.encode(), _good(0).encode(), bad, _good(1).encode()]) + b"\n")
    res = read_jsonl(p, Answer, kind="answers", strict=False)
    assert [a.entry_id for a in res.records] == ["e0", "e1"]
    assert len(res.errors) == 1 and res.errors[0].line == 3 and message in str(res.errors[0]) and str(p) in str(res.errors[0])
    with pytest.raises(RecordError, match=f"{p}:3"):
        read_jsonl(p, Answer, kind="answers")


def test_check_reports_a_lone_surrogate_line(tmp_path):
    from click.testing import CliRunner

    from kalma.cli import main

    p = tmp_path / "a.jsonl"
    p.write_bytes(b"\n".join([HEAD.encode(), b'{"entry_id": "e9", "text": "\\udc00 x", "model": "m"}', _good(1).encode()]) + b"\n")
    res = CliRunner().invoke(main, ["check", str(p), "--kind", "answers", "--all-errors"])
    assert res.exit_code == 1 and "1 good record, 1 bad line" in res.stdout and f"{p}:2" in res.stderr


@pytest.mark.parametrize(
    "lines,message",
    [
        ([HEAD[:30], _good(0)], "the header line is damaged"),
        ([HEAD, _good(0), HEAD, _good(1)], "a second header line (the first is line 1)"),
    ],
)
def test_a_torn_or_repeated_header_is_an_error(tmp_path, lines, message):
    p = tmp_path / "a.jsonl"
    p.write_text("\n".join(lines) + "\n")
    for strict in (True, False):
        with pytest.raises(RecordError, match=message.replace("(", r"\(").replace(")", r"\)")):
            read_jsonl(p, Answer, kind="answers", strict=strict)


def test_evaluate_scores_the_good_rows_around_bad_bytes(tmp_path, entries):
    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    good = [Answer(entry_id=e.id, text="A painter [Q212657, occupation: painter].", model="m").model_dump_json().encode() for e in entries]
    (tmp_path / "a.jsonl").write_bytes(b"\n".join([HEAD.encode(), good[0], b"\xff\xfe", b'{"x": "\\ud800"}', *good[1:]]) + b"\n")
    s = evaluate(tmp_path / "d.jsonl", tmp_path / "a.jsonl", tmp_path / "out", metrics=["citation"], progress=False)
    assert s.counts["answers"] == len(entries) and s.counts["missing_answers_scored_empty"] == 0
    assert s.problems["corrupt_line"] == 2


# ---------------------------------------------------------------- stale outputs


def test_evaluate_refuses_to_resume_over_changed_answers(tmp_path, entries):
    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    cited = [Answer(entry_id=e.id, text=f"[{t.subject}, {t.relation_label}: {t.value_label}]", model="m") for e in entries for t in (e.minimum_set or [])[:1]]
    write_jsonl(tmp_path / "a.jsonl", cited, "answers")
    first = evaluate(tmp_path / "d.jsonl", tmp_path / "a.jsonl", tmp_path / "out", metrics=["citation"], progress=False)
    assert first.value("citation.recall_micro") > 0
    write_jsonl(tmp_path / "a.jsonl", [Answer(entry_id=e.id, text="Unknown [NA].", model="m") for e in entries], "answers")
    with pytest.raises(ResumeMismatch, match="input answers"):
        evaluate(tmp_path / "d.jsonl", tmp_path / "a.jsonl", tmp_path / "out", metrics=["citation"], progress=False)
    fresh = evaluate(tmp_path / "d.jsonl", tmp_path / "a.jsonl", tmp_path / "out", metrics=["citation"], progress=False, overwrite=True)
    assert fresh.value("citation.recall_micro") == 0.0
    # the same inputs resume: nothing is redone and the figures stand
    again = evaluate(tmp_path / "d.jsonl", tmp_path / "a.jsonl", tmp_path / "out", metrics=["citation"], progress=False)
    assert again.metrics == fresh.metrics


def test_an_output_of_an_older_format_is_not_resumed(tmp_path, entries):
    """Scores of format version 3 (no verdicts) must not get newer rows appended: the run
    stops naming both versions, and --overwrite starts it over."""
    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    write_jsonl(tmp_path / "a.jsonl", [Answer(entry_id=e.id, text="Unknown [NA].", model="m") for e in entries], "answers")
    evaluate(tmp_path / "d.jsonl", tmp_path / "a.jsonl", tmp_path / "out", metrics=["citation"], progress=False)
    scores = tmp_path / "out" / "scores.jsonl"
    lines = scores.read_text().splitlines()
    header = json.loads(lines[0])
    header["kalma"]["format_version"] = 3
    scores.write_text("\n".join([json.dumps(header), '{"answer_id": "x", "entry_id": "x", "values": {"citation": {"recall": 0.5}}}']) + "\n")
    with pytest.raises(ResumeMismatch, match=f"written in format version 3 and this kalma writes {FORMAT_VERSION}"):
        evaluate(tmp_path / "d.jsonl", tmp_path / "a.jsonl", tmp_path / "out", metrics=["citation"], progress=False)
    assert scores.read_text().count("\n") == 2  # untouched
    s = evaluate(tmp_path / "d.jsonl", tmp_path / "a.jsonl", tmp_path / "out", metrics=["citation"], progress=False, overwrite=True)
    assert s.counts["answers"] == len(entries)


def test_answer_refuses_to_resume_with_another_llm(tmp_path, entries):
    from baselines.pipeline import BaselineConfig, answer_dataset

    out = tmp_path / "a.jsonl"
    answer_dataset(entries, out, BaselineConfig(retrieval="gold"), progress=False)
    before = out.read_text()
    with scripted_server([reply(500)]) as (url, asked):  # a server that is there, since it is asked first
        with pytest.raises(ResumeMismatch, match="setting llm"):
            answer_dataset(entries, out, BaselineConfig(llm=f"openai-compatible:{url}/v1:m", retrieval="gold"), progress=False)
    assert out.read_text() == before and not asked  # refused before any request is made
    report = answer_dataset(entries, out, BaselineConfig(retrieval="gold"), progress=False)  # same settings: resumes
    assert report["written"] == 0 and out.read_text() == before


def test_a_resubmission_replaces_its_entry_and_the_board_says_so(tmp_path, entries):
    from bench.leaderboard import collect
    from bench.submissions import submit
    from evaluation.base import EvalOptions

    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    meta = {"submission": {"name": "mine", "model": "m", "seed": 0, "settings": {}}}
    cited = [
        Answer(entry_id=e.id, text=" ".join(f"[{t.subject}, {t.relation_label}: {t.value_label}]" for t in e.minimum_set or []), model="m") for e in entries
    ]
    write_jsonl(tmp_path / "s.jsonl", cited, "answers", header=meta)
    first = submit(tmp_path / "s.jsonl", tmp_path / "d.jsonl", tmp_path / "board", EvalOptions(), ["citation"])
    assert first.summary.value("citation.recall_micro") == 1.0 and first.replaces is None
    write_jsonl(tmp_path / "s.jsonl", [Answer(entry_id=e.id, text="Unknown [NA].", model="m") for e in entries], "answers", header=meta)
    time.sleep(1.01 - time.time() % 1)  # into the next second: `filed` is written to the second
    second = submit(tmp_path / "s.jsonl", tmp_path / "d.jsonl", tmp_path / "board", EvalOptions(), ["citation"])
    assert second.summary.value("citation.recall_micro") == 0.0  # the new answers' scores, not the old ones
    assert second.replaces is not None and second.replaces.filed == first.filed and second.filed > first.filed
    row = next(r for t in collect(tmp_path / "board").tables for r in t.rows if r.name == "mine")
    assert row.values["citation.recall_micro"] == 0.0 and "replaces the entry of" in row.filed


def test_a_resubmission_killed_between_its_renames_leaves_the_old_entry_on_the_board(tmp_path, entries):
    """The swap is two renames (entry -> .replaced, staging -> entry). Killed between them, the
    board still shows the old entry, and the next submission completes the swap."""
    import shutil

    from bench.leaderboard import collect
    from bench.submissions import submit
    from evaluation.base import EvalOptions

    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    meta = {"submission": {"name": "mine", "model": "m", "seed": 0, "settings": {}}}
    write_jsonl(tmp_path / "s.jsonl", [Answer(entry_id=e.id, text="x [NA].", model="m") for e in entries], "answers", header=meta)
    board = tmp_path / "board"
    first = submit(tmp_path / "s.jsonl", tmp_path / "d.jsonl", board, EvalOptions(), ["citation"])
    entry = board / "submissions" / "mine"
    shutil.copytree(entry, entry.with_name(".mine.staging"))  # the new entry, scored, not yet in place
    entry.rename(entry.with_name(".mine.replaced"))  # the first rename done, then the kill
    shown = [r for t in collect(board).tables for r in t.rows if r.name == "mine"]
    assert len(shown) == 1 and shown[0].filed.startswith(first.filed[:16].replace("T", " ")) and not collect(board).damaged
    submit(tmp_path / "s.jsonl", tmp_path / "d.jsonl", board, EvalOptions(), ["citation"])
    assert sorted(p.name for p in (board / "submissions").iterdir() if p.is_dir()) == ["mine"]  # no staging or replaced folder left
    assert [r.name for t in collect(board).tables for r in t.rows if not r.reference] == ["mine"]


# ---------------------------------------------------------------- concurrent writers

HOLD = """
import sys
from kalma.jsonl import JsonlWriter
from kalma.schema import Answer
with JsonlWriter(sys.argv[1], "answers") as w:
    for i in range(5):
        w.write(Answer(entry_id=f"e{i}", text="x", model="first"))
    print("holding", flush=True)
    sys.stdin.readline()  # until the test has seen the second writer refused
    for i in range(5, 10):
        w.write(Answer(entry_id=f"e{i}", text="x", model="first"))
"""


def test_a_second_writer_is_refused_at_once_and_the_file_stays_intact(tmp_path, entries):
    out = tmp_path / "answers.jsonl"
    first = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert first.stdout.readline().strip() == "holding"
    t0 = time.time()
    second = subprocess.run(
        [sys.executable, "-m", "kalma.cli", "answer", "--dataset", str(_dataset(tmp_path, entries)), "--retrieval", "gold", "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert time.time() - t0 < 30 and second.returncode == 1
    assert f"is being written by another run (pid {first.pid} on" in second.stderr and "Traceback" not in second.stderr
    first.communicate("\n", timeout=30)
    rows = read_jsonl(out, Answer, kind="answers")
    assert [a.entry_id for a in rows] == [f"e{i}" for i in range(10)] and {a.model for a in rows} == {"first"}
    # once the first has finished, the lock is free again
    with JsonlWriter(out, "answers", append=True):
        pass


def test_two_names_of_one_file_take_one_lock(tmp_path):
    """`-o link.jsonl` and `-o real.jsonl`, the link pointing at the file: the second is refused."""
    (tmp_path / "d").mkdir()
    real, link = tmp_path / "real.jsonl", tmp_path / "link.jsonl"
    real.touch()
    link.symlink_to(real)
    for other in (link, tmp_path / "d" / ".." / "real.jsonl"):
        with JsonlWriter(real, "answers"):
            with pytest.raises(OutputLocked, match="is being written by another run"):
                JsonlWriter(other, "answers", append=True)


def test_two_writers_in_one_process_are_refused_too(tmp_path):
    with JsonlWriter(tmp_path / "x.jsonl", "answers"):
        with pytest.raises(OutputLocked, match="x.jsonl is being written by another run"):
            JsonlWriter(tmp_path / "x.jsonl", "answers")


def _dataset(tmp_path, entries):
    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    return tmp_path / "d.jsonl"


def test_two_evaluations_into_one_output_do_not_interleave(tmp_path, entries):
    """Both start together: one scores, the other is refused; the scores file holds each answer once."""
    d = _dataset(tmp_path, entries)
    write_jsonl(tmp_path / "a.jsonl", [Answer(entry_id=e.id, text="x [NA].", model="m", run=f"r{i}") for e in entries for i in range(200)], "answers")
    cmd = [
        sys.executable,
        "-m",
        "kalma.cli",
        "evaluate",
        "--dataset",
        str(d),
        "--answers",
        str(tmp_path / "a.jsonl"),
        "--metrics",
        "citation",
        "-o",
        str(tmp_path / "out"),
    ]
    procs = [subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(120), p.stderr.read()) for p in procs]
    assert sorted(rc for rc, _ in results) == [0, 1], results
    assert any("is being written by another run" in err for rc, err in results if rc == 1)
    ids = [json.loads(line)["answer_id"] for line in (tmp_path / "out" / "scores.jsonl").read_text().splitlines()[1:]]
    assert len(ids) == len(set(ids)) == 200 * len(entries)


# ---------------------------------------------------------------- a damaged cache


@pytest.mark.parametrize("damage", ["random", "truncated"])
def test_a_damaged_cache_names_its_file_and_clear_recovers(tmp_path, monkeypatch, damage):
    from click.testing import CliRunner

    from kalma import cache as cache_mod
    from kalma.cli import main

    monkeypatch.setenv("KALMA_CACHE_DIR", str(tmp_path))
    path = tmp_path / "cache.sqlite"
    if damage == "random":
        path.write_bytes(bytes(range(256)) * 64)
    else:
        good = Cache(path)
        good.put_many("kg", {f"k{i}": "v" * 500 for i in range(2000)})
        good._conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 3])
    cache_mod._default = None
    with pytest.raises(CacheError, match=f"{path}: the call cache is damaged"):
        c = Cache(path)
        c.get_many([f"k{i}" for i in range(2000)])
    res = CliRunner().invoke(main, ["cache", "clear"])
    assert res.exit_code == 0 and "removed" in res.stdout
    cache_mod._default = None
    assert Cache(path).stats()["entries"] == {}


def test_a_cache_of_another_layout_is_one_line_and_clear_leaves_a_working_cache(tmp_path, monkeypatch):
    import sqlite3

    from click.testing import CliRunner

    from kalma import cache as cache_mod
    from kalma.cli import main

    monkeypatch.setenv("KALMA_CACHE_DIR", str(tmp_path))
    path = tmp_path / "cache.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE calls (id INTEGER PRIMARY KEY, payload BLOB)")
        conn.execute("INSERT INTO calls (payload) VALUES (x'00')")
    cache_mod._default = None
    runner = CliRunner()
    res = runner.invoke(main, ["cache", "stats"])
    assert res.exit_code == 1 and res.stderr.strip().endswith("another layout (id, payload); `kalma cache clear` replaces it with an empty one")
    cache_mod._default = None
    res = runner.invoke(main, ["cache", "clear"])
    assert res.exit_code == 0 and "another layout" in res.stdout and str(path) in res.stdout
    cache_mod._default = None
    Cache(path).put("k", "llm", {"text": "ok"})  # a working cache again
    assert Cache(path).get("k") == {"text": "ok"} and json.loads(runner.invoke(main, ["cache", "stats"]).stdout)["entries"] == {"llm": 1}


def test_an_unreadable_cached_value_is_a_miss(tmp_path, caplog):
    c = Cache(tmp_path / "c.sqlite")
    c.put("good", "llm", {"text": "ok"})
    c._conn().execute("INSERT INTO calls (key, namespace, value) VALUES ('bad', 'llm', '{not json')")
    assert c.get_many(["good", "bad"]) == {"good": {"text": "ok"}} and c.get("bad") is None
    assert "unreadable; treated as a miss" in caplog.text


def test_a_file_named_in_a_spec_is_part_of_the_resume_fingerprint(tmp_path, entries):
    """Answer with a Turtle KG, change one label in it, rerun: refused, naming the KG file,
    never resumed into a file that mixes answers from two graphs. The same for evaluate --kg."""
    from click.testing import CliRunner

    from kalma.cli import main
    from kalma.kg import demo_snapshot_path

    kg = tmp_path / "kg.ttl"
    kg.write_bytes(demo_snapshot_path().read_bytes())
    dataset = tmp_path / "ds.jsonl"
    write_jsonl(dataset, entries, "dataset")
    runner = CliRunner()
    answer = ["answer", "--dataset", str(dataset), "--kg", str(kg), "--retrieval", "ner", "-o", str(tmp_path / "a.jsonl")]
    evaluate = [
        "evaluate",
        "--dataset",
        str(dataset),
        "--answers",
        str(tmp_path / "a.jsonl"),
        "--kg",
        str(kg),
        "--metrics",
        "citation",
        "-o",
        str(tmp_path / "ev"),
    ]
    assert runner.invoke(main, answer).exit_code == 0 and runner.invoke(main, evaluate).exit_code == 0
    before = (tmp_path / "a.jsonl").read_bytes()
    kg.write_text(kg.read_text(encoding="utf-8").replace('"Rome"@en', '"Roma"@en', 1), encoding="utf-8")
    for args in (answer, evaluate):
        res = runner.invoke(main, args)
        assert res.exit_code == 1 and f"input kg {kg}" in res.stderr, res.stderr
    assert (tmp_path / "a.jsonl").read_bytes() == before
    assert runner.invoke(main, [*answer, "--overwrite"]).exit_code == 0


def test_damaged_board_files_are_listed_and_the_rest_of_the_board_is_rendered(tmp_path, entries):
    import shutil

    from click.testing import CliRunner

    from bench.submissions import submit
    from evaluation.base import EvalOptions
    from kalma.cli import main

    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    meta = {"submission": {"name": "good", "model": "m", "seed": 0, "settings": {}}}
    write_jsonl(tmp_path / "s.jsonl", [Answer(entry_id=e.id, text="x [NA].", model="m") for e in entries], "answers", header=meta)
    board = tmp_path / "board"
    submit(tmp_path / "s.jsonl", tmp_path / "d.jsonl", board, EvalOptions(), ["citation"])
    good = json.loads((board / "submissions" / "good" / "submission.json").read_text())
    damage = {
        "yesterday": lambda r: r.__setitem__("replaces", "yesterday"),
        "notdict": lambda r: r["summary"]["metrics"].__setitem__("citation", 5),
        "seedlist": lambda r: r["submission"].__setitem__("seeds", [[1]]),
    }
    for name, mutate in damage.items():
        shutil.copytree(board / "submissions" / "good", board / "submissions" / name)
        rec = json.loads(json.dumps(good))
        mutate(rec)
        (board / "submissions" / name / "submission.json").write_text(json.dumps(rec))
    (board / "runs" / "r").mkdir(parents=True)
    (board / "runs" / "r" / "results.json").write_text(json.dumps({"tables": {"retrieval": [{"experiment": "retrieval", "condition": "100", "llm": "m"}]}}))
    res = CliRunner().invoke(main, ["leaderboard", str(board), "-o", str(tmp_path / "site")])
    assert res.exit_code == 1 and len(res.stderr.strip().splitlines()) == 1 and "(and 3 more, listed on the page)" in res.stderr
    page = (tmp_path / "site" / "index.html").read_text()
    for name in damage:
        assert f"submissions/{name}/submission.json:1: field" in page
    assert "runs/r/results.json:1: field" in page and '>good <a class="answers"' in page


def test_flipped_human_labels_are_a_new_run_not_a_resumed_one(tmp_path, entries):
    """`evaluate --nli table:labels.jsonl`, then every label flipped: the rerun is refused naming
    the table (it once resumed and kept alignment 100.0); --overwrite scores 0.0."""
    from click.testing import CliRunner

    from kalma.cli import main

    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    texts = {e.id: ("She was a painter [Q212657, occupation: painter]." if "Q212657" in e.people else "Unknown.") for e in entries}
    write_jsonl(tmp_path / "a.jsonl", [Answer(entry_id=k, text=t, model="m") for k, t in texts.items()], "answers")
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"premise": "She was a painter.", "hypothesis": "occupation: painter", "label": "entailment"}) + "\n")
    args = ["evaluate", "--dataset", str(tmp_path / "d.jsonl"), "--answers", str(tmp_path / "a.jsonl"), "--metrics", "alignment"]
    args += ["--nli", f"table:{labels}", "-o", str(tmp_path / "ev")]
    runner = CliRunner()
    assert runner.invoke(main, args).exit_code == 0
    assert json.loads((tmp_path / "ev" / "summary.json").read_text())["metrics"]["alignment"]["alignment_micro"] == 1.0
    labels.write_text(labels.read_text().replace('"entailment"', '"neutral"'))
    res = runner.invoke(main, args)
    assert res.exit_code == 1 and f"input nli {labels}" in res.stderr, res.stderr
    assert runner.invoke(main, [*args, "--overwrite"]).exit_code == 0
    assert json.loads((tmp_path / "ev" / "summary.json").read_text())["metrics"]["alignment"]["alignment_micro"] == 0.0


def test_a_refusal_names_a_holder_still_writing_its_note(tmp_path):
    """The holder writes its note just after taking the lock; a run refused in between waits for
    the note instead of saying 'holder unknown' (it did, once in five races)."""
    import os
    import threading

    from kalma.locks import OutputLock, lock_path, try_lock, unlock, write_note

    out = tmp_path / "x.jsonl"
    fd = try_lock(lock_path(out))
    assert fd is not None
    late = threading.Timer(0.3, write_note, args=(fd,))
    late.start()
    try:
        with pytest.raises(OutputLocked, match=rf"being written by another run \(pid {os.getpid()} on "):
            OutputLock(out).acquire()
    finally:
        late.join()
        unlock(lock_path(out), fd)
    assert not lock_path(out).exists()
