"""First contact, ninth pass (issue 65 §6), through the CLI as a new user runs it: records drawn
from a generated dump of people, organizations, cities and works, said per class pair and checked
by `kalma check`; records removed aloud; and the smaller things a new user met."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kalma.cli import main
from perf.dumpgen import write_dump
from perf.random_models import build_causal
from tests.conftest import ROOT
from tests.e2e.test_first_contact_8 import _ok, _run

pytest.importorskip("duckdb")


def _fails(args: list[str], *said: str) -> str:
    """A user's mistake: one line on stderr, a non-zero exit, no traceback."""
    code, out, err = _run(args)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code != 0 and "Traceback" not in err and len(lines) == 1 and lines[0].startswith("kalma: "), out + err
    for s in said:
        assert s in err, err
    return err


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small generated dump of the issue's four kinds (people, organizations, cities, works), imported."""
    work = tmp_path_factory.mktemp("first-contact-9")
    write_dump(work / "truthy.nt", 40, "nt", seed=5, with_release=False, organizations=60, cities=60, works=40)
    _ok(["kg", "import", str(work / "truthy.nt"), "-o", str(work / "store"), "--threads", "2"])
    return work


def _from_kg(world: Path, out: Path, *args: str) -> tuple[str, str]:
    return _ok(["records", "from-kg", "--kg", f"wikidata-local:{world / 'store'}", *args, "--seed", "3", "-o", str(out)])


# ---------------------------------------------------------------- 2: records of the classes asked for


def test_from_kg_draws_the_classes_named_says_each_class_pair_and_takes_pairs(world: Path, tmp_path: Path):
    # a novel has no linking properties of its own: it links by those the registry knows (P50, author)
    out, err = _from_kg(world, tmp_path / "both.jsonl", "--classes", "Q8261,Q5", "-n", "40")
    drawn = _lines(tmp_path / "both.jsonl")[1:]
    by_pair = {k: sum(f"{r['class_a']}:{r['class_b']}" == k for r in drawn) for k in ("Q8261:Q8261", "Q8261:Q5", "Q5:Q8261", "Q5:Q5")}
    assert by_pair["Q8261:Q5"] > 0 and by_pair["Q5:Q5"] > 0 and not err
    assert "by class pair (class_a:class_b): " + ", ".join(f"{k} {n}" for k, n in by_pair.items()) in out

    out, err = _from_kg(world, tmp_path / "pair.jsonl", "--pair", "Q8261:Q5", "-n", "15")
    drawn = _lines(tmp_path / "pair.jsonl")
    assert drawn[0]["kalma"]["provenance"]["pairs"] == ["Q8261:Q5"] and drawn[0]["kalma"]["provenance"]["classes"] == ["Q8261", "Q5"]
    assert len(drawn[1:]) == 15 and {(r["class_a"], r["relation"], r["class_b"]) for r in drawn[1:]} == {("Q8261", "P50", "Q5")}
    assert "by class pair (class_a:class_b): Q8261:Q5 15, Q5:Q8261 0" in out and not err

    # a class in none of the records drawn: one line, naming it and what to ask
    out, err = _from_kg(world, tmp_path / "cities.jsonl", "--classes", "Q4830453,Q515", "--properties", "P190", "-n", "5")
    assert "Q4830453:Q515 0, Q515:Q4830453 0, Q515:Q515 5" in out
    assert err.splitlines() == [
        "warning: no record drawn has Q4830453 (business) at either end: ask for its links with --pair Q4830453:Q515, "
        "and name the properties that link them with --properties (these were P190)"
    ]


def test_from_kg_pair_errors_are_one_line(world: Path, tmp_path: Path):
    store = f"wikidata-local:{world / 'store'}"
    base = ["records", "from-kg", "--kg", store, "-o", str(tmp_path / "r.jsonl")]
    _fails([*base, "--pair", "Q5"], "--pair", "'Q5': give two class ids as A:B")
    _fails([*base, "--classes", "Q515", "--pair", "Q515:Q5"], "--pair", "Q5 is not among --classes Q515")
    _fails(base, "--classes Q43229,Q515, or --pair Q8261:Q5")
    assert not (tmp_path / "r.jsonl").exists()


# ---------------------------------------------------------------- 3: kalma check reads records from-kg's file


def test_check_takes_the_records_from_kg_writes_headerless_with_classes_and_the_former_kind(world: Path, tmp_path: Path):
    records = tmp_path / "records.jsonl"
    _from_kg(world, records, "--classes", "Q43229,Q515", "-n", "6")
    lines = records.read_text().splitlines()
    assert json.loads(lines[0])["kalma"]["kind"] == "records"
    out, _ = _ok(["check", "--kind", "records", str(records)])
    assert out.strip() == f"{records}: 6 good records, 0 bad lines"

    bare = tmp_path / "bare.jsonl"  # the columns the docs describe, no header
    bare.write_text("\n".join(lines[1:]) + "\n")
    assert all("class_a" in json.loads(line) for line in lines[1:])
    out, _ = _ok(["check", "--kind", "records", str(bare)])
    assert out.strip() == f"{bare}: 6 good records, 0 bad lines"

    older = tmp_path / "older.jsonl"  # written before the fix, under the kind's former name
    head = json.loads(lines[0])
    head["kalma"]["kind"] = "relation_records"
    older.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    _ok(["check", "--kind", "records", str(older)])

    bad = tmp_path / "bad.jsonl"
    row = {**json.loads(lines[1]), "class_b": "Q515|Q5x"}
    bad.write_text(lines[1] + "\n" + json.dumps(row) + "\n")
    _fails(["check", "--kind", "records", str(bad)], f"{bad}:2: field 'class_b': 'Q5x' is not a Wikidata class id")


# ---------------------------------------------------------------- 4: records removed aloud


def test_build_says_on_stderr_how_many_records_were_removed_why_and_the_first_line(world: Path, tmp_path: Path):
    records = tmp_path / "records.jsonl"
    _from_kg(world, records, "--classes", "Q43229,Q515", "-n", "6")
    rows = _lines(records)
    del rows[3]["paragraph"]  # line 4
    rows[5]["person_b"] = ""  # line 6
    rows[6]["person_a"] = "Nobody Atall"  # line 7: not in the KG
    records.write_text("".join(json.dumps(r) + "\n" for r in rows))
    lm = "hf:" + str(build_causal(tmp_path / "lm"))
    code, out, err = _run(
        ["build", "--records", str(records), "--kg", f"wikidata-local:{world / 'store'}", "--rounds", "0", "--lm", lm, "-o", str(tmp_path / "ds.jsonl")]
    )
    assert code == 0, out + err
    notes = [ln for ln in err.splitlines() if ln.startswith("note: ")]
    assert len(notes) == 1 and re.fullmatch(
        r"note: removed 3 of 6 records: missing field 2 \(first records\.jsonl:4: no paragraph\), "
        r"not found 1 \(first records\.jsonl:7: candidates \[\] / \['Q[0-9]+'\]\); every one is in ds\.removed\.jsonl",
        notes[0],
    ), err


# ---------------------------------------------------------------- 11: perf.dumpgen's counts


def test_dumpgen_counts_records_only_when_it_writes_them(tmp_path: Path):
    def counts(*args: str) -> dict[str, int]:
        done = subprocess.run(
            [sys.executable, "-m", "perf.dumpgen", "--people", "6", "--no-release", *args], cwd=ROOT, capture_output=True, text=True, check=True
        )
        return json.loads(done.stdout)

    assert set(counts("-o", str(tmp_path / "a.nt"))) == {"entities", "lines"}
    with_records = counts("-o", str(tmp_path / "b.nt"), "--records", str(tmp_path / "r.jsonl"))
    assert with_records["records"] == len((tmp_path / "r.jsonl").read_text().splitlines()) > 0


# ---------------------------------------------------------------- 10: answers made on another dataset


def _renamed(dataset: Path, out: Path) -> Path:
    """The demo's entries under other ids: another dataset, whose ids no demo answer names."""
    rows = _lines(dataset)
    out.write_text("".join(json.dumps({**r, "id": "other-" + r["id"]} if "id" in r else r) + "\n" for r in rows))
    return out


def test_evaluate_says_the_answers_were_made_on_another_dataset_naming_both(dataset: Path, tmp_path: Path):
    answers = tmp_path / "answers.jsonl"
    _ok(["answer", "--dataset", str(dataset), "--retrieval", "gold", "-o", str(answers)])
    other = _renamed(dataset, tmp_path / "other.jsonl")
    _fails(
        ["evaluate", "--dataset", str(other), "--answers", str(answers), "-o", str(tmp_path / "e")],
        f"{answers} was made on another dataset, the one of digest sha256:",
        f"(its header's), not on {other} (digest sha256:",
    )
    assert not (tmp_path / "e").exists()
    _ok(["evaluate", "--dataset", str(dataset), "--answers", str(answers), "-o", str(tmp_path / "same")])  # its own dataset: scored


def test_evaluate_says_an_inspect_log_was_made_on_another_dataset_naming_both(inspect_run: dict[str, Path], tmp_path: Path):
    log, dataset = inspect_run["log"], inspect_run["dataset"]  # `inspect eval kalma/kalma_specific -T dataset=DATASET`
    other = _renamed(dataset, tmp_path / "other.jsonl")
    _fails(
        ["evaluate", "--dataset", str(other), "--answers", str(log), "-o", str(tmp_path / "e")],
        f"{log} was made on another dataset, {dataset.resolve()}, not on {other}: none of its answers is to one of these entries",
    )


# ---------------------------------------------------------------- 8: judge pairs' KG, absolute and with its digest


def test_judge_pairs_records_its_kg_absolute_with_its_digest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from kalma.kg import demo_snapshot_path, open_source
    from kalma.resume import path_digest

    made = tmp_path / "made"
    made.mkdir()
    (made / "kg.ttl").write_bytes(demo_snapshot_path().read_bytes())
    monkeypatch.chdir(made)
    _ok(["dataset", "demo", "--kg", "kg.ttl", "-o", "ds.jsonl"])  # given relative: the dataset names it whole, with its version
    built = json.loads((made / "ds.jsonl").read_text().splitlines()[0])["kalma"]["provenance"]
    assert built["kg"] == str(made / "kg.ttl") and built["kg_version"]["digest"] == path_digest(made / "kg.ttl")
    _ok(["judge", "pairs", "--dataset", "ds.jsonl", "-o", "pairs.jsonl"])
    said = json.loads((made / "pairs.jsonl").read_text().splitlines()[0])["kalma"]["provenance"]
    assert said["config"]["kg"] == str(made / "kg.ttl") and said["config"]["dataset"] == str(made / "ds.jsonl")
    assert said["kg_version"]["digest"] == path_digest(made / "kg.ttl") and said["kg_version"]["kind"] == "rdflib"
    monkeypatch.chdir(tmp_path)  # another folder: what the header names still opens
    assert open_source(said["config"]["kg"]).labels(["Q68753"])
    out, _ = _ok(["judge", "evaluate", "--nli", "lexical", "--pairs", "made/pairs.jsonl", "--resamples", "20"])
    assert "balanced accuracy" in out.lower()


# ---------------------------------------------------------------- 6: a judge that cannot judge


def test_judge_evaluate_refuses_a_judge_whose_replies_are_mostly_unreadable(tmp_path: Path):
    from tests.servers import answering, scripted_server

    err = _fails(["judge", "evaluate", "--nli", "llm:template", "--resamples", "10", "-o", str(tmp_path / "t")], "--nli llm:template: 77 of its 77 replies")
    assert "were neither yes nor no (e.g. 'The template backend has'), more than 50%: it cannot judge these pairs" in err
    assert not (tmp_path / "t" / "judge.md").exists()

    def pairs(odd: int) -> Path:  # four pairs, `odd` of them answered with neither yes nor no
        path = tmp_path / f"pairs-{odd}.jsonl"
        path.write_text("".join(json.dumps({"doc": f"{'odd' if i < odd else 'ok'} passage {i}.", "claim": "a: b", "label": i % 2}) + "\n" for i in range(4)))
        return path

    def reply(prompt: str) -> str:
        return "Perhaps" if "Passage: odd" in prompt else "Yes"

    with scripted_server([answering(reply)], models=[{"id": "m"}]) as (url, _):
        spec = f"llm:openai-compatible:{url}/v1:m"
        out, _ = _ok(["judge", "evaluate", "--nli", spec, "--pairs", str(pairs(2)), "--no-cache", "--resamples", "10"])  # half: measured, and said
        assert "4 replies came without log-probabilities (P is 1 for yes, 0 for no), 2 unreadable (counted as no)" in out
        _fails(["judge", "evaluate", "--nli", spec, "--pairs", str(pairs(3)), "--no-cache", "--resamples", "10"], "3 of its 4 replies", "'Perhaps'")


def test_every_label_spelling_the_docs_list_is_read_and_no_other(tmp_path: Path):
    text = (ROOT / "docs" / "judges.md").read_text()
    said = re.search(r"supported (`[^\n]*`);\n\s*not supported (`[^\n]*`)\.", text)
    assert said, "docs/judges.md lists the label spellings"
    yes, no = ([w.strip("`") for w in re.findall(r"`[^`]+`", part)] for part in said.groups())
    rows = [(w, 1) for w in yes] + [(w, 0) for w in no] + [(" YES ", 1), ("Not_Entailment", 0), (1.0, 1)]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps({"doc": f"d{i}.", "claim": "c", "label": w, "kind": str(want)}) + "\n" for i, (w, want) in enumerate(rows)))
    out, _ = _ok(["check", "--kind", "pairs", str(path)])
    assert f"{len(rows)} good rows, 0 bad rows" in out
    from evaluation.judge_quality import read_pairs

    assert [p.label for p in read_pairs(path)] == [want for _, want in rows]
    for other in ("y", "n", "maybe", "2", "entails"):
        path.write_text(json.dumps({"doc": "d.", "claim": "c", "label": other}) + "\n")
        code, _, err = _run(["check", "--kind", "pairs", str(path)])
        assert code == 1 and f"{path}:1: field 'label'" in err, err


# ---------------------------------------------------------------- 7: the leaderboard's ranks and the paper's table


def _ranks(site: Path) -> dict[str, str]:
    """{submission: its Rank cell} of the board's markdown."""
    md = (site / "leaderboard.md").read_text()
    head = next(line for line in md.splitlines() if line.startswith("| Submission |")).split(" | ")
    return {cells[0].removeprefix("| "): cells[head.index("Rank")] for line in md.splitlines() if len(cells := line.split(" | ")) == len(head)}


def test_a_system_given_other_knowledge_is_not_ranked_as_a_tie_and_the_papers_people_only_beside_people(dataset: Path, tmp_path: Path):
    from kalma.jsonl import read_jsonl, write_jsonl
    from kalma.schema import Answer, DatasetEntry

    entries = list(read_jsonl(dataset, DatasetEntry))
    cites = [f"{t.subject}, {t.relation_label}: {t.value_label}" for t in (e.knowledge_pool.triples()[0] for e in entries)]
    right = [Answer(entry_id=e.id, text=f"It was so [{c}].", model="m") for e, c in zip(entries, cites)]
    half = [a if k % 2 else a.model_copy(update={"text": "Nothing cited."}) for k, a in enumerate(right)]
    # the same answers, each given one entity's knowledge only: not comparable with answers given the pool
    other = [a.model_copy(update={"kg": e.knowledge_pool.model_copy(update={"entities": e.knowledge_pool.entities[:1]})}) for a, e in zip(half, entries)]
    board, site = tmp_path / "board", tmp_path / "site"
    for name, answers in (("right", right), ("right-too", right), ("half", half), ("other", other)):
        write_jsonl(tmp_path / f"{name}.jsonl", answers, "answers")
        _ok(
            [
                "bench",
                "submit",
                str(tmp_path / f"{name}.jsonl"),
                "--dataset",
                str(dataset),
                "--leaderboard",
                str(board),
                "--name",
                name,
                "--model",
                name,
                "--metrics",
                "citation",
            ]
        )
    _ok(["leaderboard", str(board), "-o", str(site)])
    rank = _ranks(site)
    assert rank["other"] == "not ranked: other knowledge"
    assert {rank[n] for n in ("half", "right", "right-too")} == {"1-3", "1-3 ="}  # ranked among the three comparable rows only
    md = (site / "leaderboard.md").read_text()
    assert "| half | right |" in md and "| other |" not in md.split("| A | B |")[1].split("\n\n")[0]  # no paired test row for it
    assert "KaLMA paper" in (site / "leaderboard.md").read_text()  # a board of people: the paper's people beside it
    page = (site / "index.html").read_text()
    assert "not ranked: other knowledge" in page

    # a dataset of organizations and cities: the paper's table of people is not shown beside it
    orgs = tmp_path / "orgs.jsonl"
    write_jsonl(orgs, [e.model_copy(update={"meta": {**e.meta, "classes": ["Q43229", "Q515"]}}) for e in entries], "dataset")
    board2 = tmp_path / "board2"
    _ok(
        [
            "bench",
            "submit",
            str(tmp_path / "right.jsonl"),
            "--dataset",
            str(orgs),
            "--leaderboard",
            str(board2),
            "--name",
            "right",
            "--model",
            "m",
            "--metrics",
            "citation",
        ]
    )
    _ok(["leaderboard", str(board2), "-o", str(tmp_path / "site2")])
    assert "KaLMA paper" not in (tmp_path / "site2" / "leaderboard.md").read_text()
    assert "KaLMA paper" not in (tmp_path / "site2" / "index.html").read_text()


# ---------------------------------------------------------------- 5: progress that says something


def test_build_shows_the_rounds_moving_and_an_estimate_only_once_a_window_has_finished(world: Path, tmp_path: Path):
    records = tmp_path / "records.jsonl"
    _from_kg(world, records, "--classes", "Q43229,Q515", "-n", "6")
    lm = "hf:" + str(build_causal(tmp_path / "lm"))
    args = ["build", "--records", str(records), "--kg", f"wikidata-local:{world / 'store'}", "--rounds", "2", "--window", "3", "--lm", lm]
    code, out, err = _run([*args, "-o", str(tmp_path / "ds.jsonl")])
    assert code == 0, out + err
    shown = [s.strip() for s in err.replace("\r", "\n").splitlines() if s.startswith("build (template)")]
    before = [s for s in shown if re.search(r"\| [0-2]/6 \[", s)]
    after = [s for s in shown if re.search(r"\| [4-6]/6 \[", s)]
    assert before and all("an estimate after 3 entries" in s and "<" not in s for s in before), shown
    assert any("scorer call 1: " in s and " texts of 3 entries" in s for s in before), shown  # inside the first window's rounds
    assert after and re.search(r"6/6 \[[0-9:]+<[0-9:]+", after[-1]), shown  # tqdm's estimate, once a window has finished


@pytest.fixture(scope="module")
def tiny_llm(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The tiny random causal model, with room for a demo prompt and its knowledge."""
    return "hf:" + str(build_causal(tmp_path_factory.mktemp("tiny-llm"), positions=1024))


def _in_a_log(args: list[str], every: str | None) -> tuple[str, list[str]]:
    """stdout and the progress lines of a run whose stderr is no terminal (a log)."""
    res = CliRunner().invoke(main, args, env={"KALMA_PROGRESS_EVERY": every})
    assert res.exit_code == 0, res.output + res.stderr
    return res.stdout, [ln for ln in res.stderr.splitlines() if ln.startswith(("answer: ", "evaluate: "))]


def test_answer_and_evaluate_say_in_a_log_how_many_prompts_are_done_as_the_models_batches_finish(dataset: Path, tiny_llm: str, tmp_path: Path):
    answers = tmp_path / "a.jsonl"
    ask = ["answer", "--dataset", str(dataset), "--llm", tiny_llm, "--temperatures", "0,0.5,1", "--max-tokens", "4", "--no-cache", "-o", str(answers)]
    _, lines = _in_a_log(ask, "0")  # a line at every count: what each batch shows
    counts = [int(m.group(1)) for ln in lines if (m := re.search(r": (\d+)/18 answers, ", ln))]
    assert {6, 12, 18} <= set(counts) and counts == sorted(counts), lines  # one call of 6 prompts per temperature
    assert all("left" not in ln for ln in lines if int(ln.split("/18")[0].rsplit(" ", 1)[1]) < 6), lines  # no estimate inside the first batch
    assert any(re.search(r": 1[01]/18 answers, [0-9:]+, about [0-9:]+ left$", ln) for ln in lines), lines  # one once it has finished
    # inside a batch, each decoding step is said: the demo's six answers on SmolLM2 are one batch of minutes
    steps = [int(m.group(1)) for ln in lines if (m := re.search(r": 0/18 answers, [0-9:]+ \(decoding 6 prompts: token (\d) of at most 4\)$", ln))]
    assert steps[:2] == [1, 2] and steps == sorted(steps) and steps[-1] <= 4, lines

    # the evaluator counts answers a chunk at a time: the scorer's batches say how far its calls are meanwhile
    score = ["evaluate", "--dataset", str(dataset), "--answers", str(answers), "--lm", tiny_llm, "--metrics", "consens", "--no-cache"]
    _, lines = _in_a_log([*score, "-o", str(tmp_path / "ev")], "0")
    assert re.fullmatch(r"evaluate: 0/18 answers, [0-9:]+ \(lm: (\d+)/\1 done\)", lines[1]), lines
    assert lines[-1].startswith("evaluate: 18/18 answers, "), lines

    # by default a log gets the start and the end (a line every 30 s between), never a line per batch
    _, lines = _in_a_log([*ask, "--overwrite"], None)
    assert 2 <= len(lines) <= 3, lines
    assert lines[0].startswith(f"answer: {tiny_llm}: 0/18 answers, ") and lines[-1].startswith(f"answer: {tiny_llm}: 18/18 answers, "), lines


def test_answer_draws_a_bar_on_a_terminal_with_an_estimate_once_the_models_first_batch_has_finished(
    dataset: Path, tiny_llm: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    import contextlib
    import fcntl
    import pty
    import struct
    import termios
    import threading

    terminal, its_end = pty.openpty()
    fcntl.ioctl(its_end, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 160, 0, 0))  # a terminal 160 columns wide
    drawn: list[bytes] = []

    def read() -> None:  # as the terminal does, while the run writes: a full terminal would stop it
        with contextlib.suppress(OSError):  # the run's end closed
            while chunk := os.read(terminal, 65536):
                drawn.append(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    ask = [
        "answer",
        "--dataset",
        str(dataset),
        "--llm",
        tiny_llm,
        "--temperatures",
        "0,0.5,1",
        "--max-tokens",
        "4",
        "--no-cache",
        "-o",
        str(tmp_path / "a.jsonl"),
    ]
    with os.fdopen(its_end, "w") as stderr:
        monkeypatch.setattr(sys, "stderr", stderr)
        main(ask, standalone_mode=False)
    reader.join(timeout=10)
    os.close(terminal)
    assert json.loads(capsys.readouterr().out)["written"] == 18
    shown = [s.strip() for s in b"".join(drawn).decode().replace("\r", "\n").splitlines() if s.startswith(f"answer: {tiny_llm}")]
    before = [s for s in shown if re.search(r"\| [0-5]/18 \[", s)]
    after = [s for s in shown if re.search(r"\| 1[2-8]/18 \[", s)]
    assert before and all("an estimate after the first batch" in s and "<" not in s for s in before), shown
    assert after and re.search(r"18/18 \[[0-9:]+<[0-9:]+", after[-1]) and not any("answers, " in s for s in shown), shown  # a bar, not a log's lines


def test_progress_leaves_stdout_and_the_answers_as_they_were(dataset: Path, tiny_llm: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    from baselines.pipeline import BaselineConfig, answer_dataset
    from kalma.schema import DatasetEntry

    ask = ["answer", "--dataset", str(dataset), "--llm", tiny_llm, "--retrieval", "gold", "--max-tokens", "4", "--no-cache"]
    every, _ = _in_a_log([*ask, "-o", str(tmp_path / "every.jsonl")], "0")
    default, _ = _in_a_log([*ask, "-o", str(tmp_path / "default.jsonl")], None)
    assert every == default and "answers, " not in every and json.loads(every)["written"] == 6
    capsys.readouterr()
    cfg = BaselineConfig(llm=tiny_llm, retrieval="gold", max_tokens=4)
    answer_dataset([DatasetEntry.model_validate(r) for r in _lines(dataset)[1:]], tmp_path / "quiet.jsonl", cfg, progress=False)
    assert capsys.readouterr().err == ""  # the caller asked for none
    rows = {name: (tmp_path / f"{name}.jsonl").read_text().splitlines()[1:] for name in ("every", "default", "quiet")}
    assert rows["every"] == rows["default"] == rows["quiet"] and len(rows["every"]) == 6


# ---------------------------------------------------------------- 14: any number of judges


def test_judge_evaluate_takes_three_judges_with_every_pairs_difference_and_a_ranking(tmp_path: Path):
    pairs = [{"doc": f"Sentence {i}.", "claim": f"r: v{i}", "label": i % 2, "dataset": "d"} for i in range(16)]
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))

    def table(name: str, right: int) -> str:  # right on the first `right` pairs, wrong on the rest
        rows = [{"premise": p["doc"], "hypothesis": p["claim"], "probability": float(p["label"] if i < right else 1 - p["label"])} for i, p in enumerate(pairs)]
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        return f"table:{tmp_path / f'{name}.jsonl'}"

    wrong, right, half = table("wrong", 0), table("right", 16), table("half", 8)
    args = ["judge", "evaluate", "--nli", wrong, "--nli", right, "--nli", half, "--pairs", str(tmp_path / "pairs.jsonl"), "--resamples", "200"]
    out, _ = _ok([*args, "-o", str(tmp_path / "o")])
    section = out.split("## The judges compared")[1]
    assert f"| {wrong} | {right} | -100.0 |" in section and f"| {wrong} | {half} | -50.0 |" in section and f"| {right} | {half} | 50.0 |" in section
    ranked = re.findall(r"^([0-9])\. (\S+): ([0-9.]+)", section, re.M)
    assert ranked == [("1", right, "100.0"), ("2", half, "50.0"), ("3", wrong, "0.0")]
    report = json.loads((tmp_path / "o" / "judge.json").read_text())
    assert [r["judge"] for r in report["ranking"]] == [right, half, wrong] and len(report["differences"]) == 3


# ---------------------------------------------------------------- 15: a judge never measured on sentences that deny their citation


def test_the_board_says_when_its_alignment_judge_was_never_measured_on_negated_pairs_and_its_figure_once_it_was(dataset: Path, tmp_path: Path):
    from kalma.jsonl import read_jsonl, write_jsonl
    from kalma.schema import Answer, DatasetEntry

    entries = list(read_jsonl(dataset, DatasetEntry))
    cites = [f"{t.subject}, {t.relation_label}: {t.value_label}" for t in (e.knowledge_pool.triples()[0] for e in entries)]
    write_jsonl(tmp_path / "a.jsonl", [Answer(entry_id=e.id, text=f"It was so [{c}].", model="m") for e, c in zip(entries, cites)], "answers")
    board, site = tmp_path / "board", tmp_path / "site"
    _ok(["bench", "submit", str(tmp_path / "a.jsonl"), "--dataset", str(dataset), "--leaderboard", str(board), "--name", "a", "--model", "m"])
    _ok(["leaderboard", str(board), "-o", str(site)])
    never = "alignment judge lexical not measured on negated pairs: its alignment cannot tell a sentence that denies its citation from one that states it"
    assert never in (site / "leaderboard.md").read_text() and never in (site / "index.html").read_text()

    # the lexical judge measured on pairs of `kalma judge pairs --vary`'s kinds: wrong on every negated one
    pairs = [{"doc": f"Ann Lee was born in Town{i}.", "claim": f"Ann Lee, place of birth: Town{i}", "label": 1, "kind": "paraphrase"} for i in range(4)]
    pairs += [{"doc": f"Ann Lee was not born in Town{i}.", "claim": f"Ann Lee, place of birth: Town{i}", "label": 0, "kind": "negated"} for i in range(4)]
    pairs += [{"doc": f"Bo Ray wrote Book{i}.", "claim": f"Ann Lee, place of birth: Town{i}", "label": 0, "kind": "unrelated"} for i in range(4)]
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps({**p, "dataset": "d"}) + "\n" for p in pairs))
    _ok(["judge", "evaluate", "--nli", "lexical", "--pairs", str(tmp_path / "pairs.jsonl"), "--resamples", "200", "-o", str(board / "judge-quality")])
    assert json.loads((board / "judge-quality" / "judge.json").read_text())["judges"][0]["accuracy_by_kind"]["negated"]["correct"] == 0
    _ok(["leaderboard", str(board), "-o", str(site)])
    md = (site / "leaderboard.md").read_text()
    assert never not in md
    figure = "0.0 right on 4 negated pairs (a sentence that denies its citation; 95% interval 0.0 to 0.0; judge-quality/judge.json)"
    assert f"alignment judge lexical: {figure}" in md

    # a judge.json there that cannot be read: listed with the damaged entries, the board still made
    (board / "judge-quality" / "old").mkdir()
    (board / "judge-quality" / "old" / "judge.json").write_text("{not json")
    code, _, err = _run(["leaderboard", str(board), "-o", str(site)])
    assert code == 1 and "judge-quality/old/judge.json: not a judge.json of `kalma judge evaluate` (JSONDecodeError" in err, err
    assert f"alignment judge lexical: {figure}" in (site / "leaderboard.md").read_text()
