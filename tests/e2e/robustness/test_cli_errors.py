"""Every user mistake issue 14 lists ends in one line on stderr and a non-zero exit, never a
traceback. Each case is the smallest reproduction; the commands run through the real CLI."""

from __future__ import annotations

import gzip
import json

import pytest
from click.testing import CliRunner

from dataset_builder.demo import demo_entries
from kalma.cli import main
from kalma.jsonl import write_jsonl
from kalma.kg import open_source
from kalma.schema import Answer
from tests.conftest import ROOT
from tests.servers import free_port


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli-errors")
    entries = demo_entries(open_source("demo"))
    write_jsonl(d / "dataset.jsonl", entries, "dataset")
    write_jsonl(d / "answers.jsonl", [Answer(entry_id=e.id, text="x [NA].", model="m") for e in entries], "answers")
    (d / "future.jsonl").write_text(
        json.dumps({"kalma": {"kind": "answers", "format_version": 99, "submission": {"name": "x", "model": "m", "seed": 0, "settings": {}}}}) + "\n"
    )
    sub_head = {"kalma": {"kind": "answers", "format_version": 3, "submission": {"name": "s", "model": "m", "seed": 0, "settings": {}}}}
    (d / "sub.jsonl").write_text(
        "\n".join([json.dumps(sub_head)] + [Answer(entry_id=e.id, text="x [NA].", model="m").model_dump_json() for e in entries]) + "\n"
    )
    for board, rel, text in (
        ("board-torn", "submissions/x/submission.json", '{"submission": {"name": "x",\n "model": '),
        ("board-bare", "submissions/x/submission.json", '{"submission": {"name": "x"}}'),
        ("board-runs", "runs/r/results.json", '{"tables": {"main": [{"llm": "m"}]}}'),
    ):
        (d / board / rel).parent.mkdir(parents=True)
        (d / board / rel).write_text(text)
    (d / "noqid.json").write_text(json.dumps([["Q?", [{"qid": "Q1", "name": "A"}]], ["Q?", [{"qid": 5, "name": "B"}]]]))
    (d / "bad.ttl").write_text("this is not turtle <<< .\n")
    (d / "utf16.jsonl").write_text('{"entry_id": "demo-crane", "text": "x"}\n', encoding="utf-16")
    (d / "unreadable.jsonl").write_bytes(b'{"entry_id": "demo-crane", "text": "caf\xe9"}\n{"entry_id": \n')
    (d / "store").mkdir()
    (d / "store" / "CURRENT").write_text("garbage\n")
    (d / "release.json").write_text("not json at all")
    (d / "empty.jsonl").write_bytes(b"")
    (d / "blank.jsonl").write_text("\n  \n")
    (d / "other.csv").write_text("text,subj,rel,obj\nA painter.,Ann Lee,father,Bob Lee\n")
    (d / "records.jsonl").write_text('{"paragraph": "p", "person_a": "A B", "relation": "father", "person_b": "C D"}\n42\n')
    (d / "torn.jsonl").write_text('{"kalma": {"kind": "answ\n' + Answer(entry_id="demo-crane", text="x", model="m").model_dump_json() + "\n")
    twice = json.dumps({"kalma": {"kind": "answers", "format_version": 2}})
    (d / "twice.jsonl").write_text("\n".join([twice, Answer(entry_id="demo-crane", text="x", model="m").model_dump_json(), twice]) + "\n")
    (d / "answers.csv").write_text("entry_id,text\ndemo-crane,He wrote [NA].\n")
    (d / "plain.jsonl").write_text('{"entry_id": "demo-crane", "text": "x [NA]."}\n')
    (d / "cut.json").write_text('[{"entry_id": "demo-crane", "text": "x"}, {"entry_id": "demo-c')
    (d / "not-a-board").mkdir()
    (d / "dump.nt").write_text('<http://www.wikidata.org/entity/Q1> <http://www.w3.org/2000/01/rdf-schema#label> "universe"@en .\n')
    (d / "bad-qids.txt").write_text("Q1\nQ1 }\n")
    (d / "torn.nt.gz").write_bytes(b"\x1f\x8b\x08\x00 not a gzip stream after its magic bytes")
    (d / "torn.nt.bz2").write_bytes(b"BZh9 not a bzip2 stream after its magic bytes")
    # a download cut short: a real gzip stream whose end is missing (the threaded decoder's error)
    whole = gzip.compress(
        b"".join(b'<http://www.wikidata.org/entity/Q%d> <http://www.w3.org/2000/01/rdf-schema#label> "x%d"@en .\n' % (i, i) for i in range(50_000))
    )
    (d / "short.nt.gz").write_bytes(whole[: len(whole) // 2])
    tomls = {
        "hot": 'temperature = "hot"\n[experiments.main]\n',
        "seeds": 'seeds = "0,1"\n[experiments.main]\n',
        "accuracy": "[experiments.retrieval]\naccuracies = [1.5]\n",
        "empty": "",
        "nollms": "llms = []\n[experiments.main]\n",
        "nan": "temperature = nan\n[experiments.main]\n",
        "broken": "name = \n",
        "option": '[experiments.main]\nmetrics = ["citation", {name = "conner", agg = "median"}]\n',
        "nameless": 'nli = {argument = "x"}\n[experiments.main]\n',
        "llm": '[experiments.knowledge_removal]\nllms = ["smolm2"]\n',
        "llm_key": '[experiments.knowledge_removal]\nllm = "template"\n',
        "unused_key": '[experiments.knowledge_removal]\nretrieval = "ner"\n',
        "nodata": 'dataset = "no/such/dataset.jsonl"\n[experiments.main]\n',
    }
    for name, text in tomls.items():
        (d / f"{name}.toml").write_text(text)
    return d


def dead_endpoint() -> str:
    return f"sparql:http://127.0.0.1:{free_port()}/sparql"


CASES = {
    "kg import into a folder of something else": (["kg", "import", "{d}/dump.nt", "-o", "{d}/store"], "exists and is not an import under way"),
    "kg import, a bad id in --qids": (["kg", "import", "{d}/dump.nt", "-o", "{out}/s", "--qids", "{d}/bad-qids.txt"], "not a Wikidata id: 'Q1 }'"),
    "kg import, a torn .gz": (["kg", "import", "{d}/torn.nt.gz", "-o", "{out}/s"], "torn.nt.gz: not a readable gz stream"),
    "kg import, a .gz cut short": (["kg", "import", "{d}/short.nt.gz", "-o", "{out}/s"], "short.nt.gz: not a readable gz stream (Compressed file ended"),
    "kg import, a torn .bz2": (["kg", "import", "{d}/torn.nt.bz2", "-o", "{out}/s"], "torn.nt.bz2: not a readable bz2 stream"),
    "wikidata-local: no store": (["kg", "show", "--kg", "wikidata-local:{d}/not-a-board", "Q1"], "not a local Wikidata store (no meta.json)"),
    "dataset publish on answers": (
        ["dataset", "publish", "{d}/answers.jsonl", "-o", "{out}/pub", "--license", "cc0-1.0"],
        "expected a 'dataset' file, found 'answers'",
    ),
    "kg lookup, endpoint down": (["kg", "lookup", "--kg", "{dead}", "Artemisia Gentileschi"], "gave up after 1 attempts"),
    "answer, endpoint down": (["answer", "--dataset", "{d}/dataset.jsonl", "--kg", "{dead}", "-o", "{out}/a.jsonl"], "gave up after 1 attempts"),
    "retrieve, endpoint down": (["retrieve", "--dataset", "{d}/dataset.jsonl", "--kg", "{dead}"], "gave up after 1 attempts"),
    "bench submit, wrong kind": (
        ["bench", "submit", "{d}/dataset.jsonl", "--dataset", "{d}/dataset.jsonl", "--leaderboard", "{out}/b"],
        "expected an 'answers' file, found 'dataset'",
    ),
    "bench submit, future version": (
        ["bench", "submit", "{d}/future.jsonl", "--dataset", "{d}/dataset.jsonl", "--leaderboard", "{out}/b"],
        "unsupported format version 99",
    ),
    "--seeds a": (["answer", "--dataset", "{d}/dataset.jsonl", "--seeds", "a", "-o", "{out}/a.jsonl"], "'a' is not an integer"),
    "--temperatures x": (["answer", "--dataset", "{d}/dataset.jsonl", "--temperatures", "0.5,x", "-o", "{out}/a.jsonl"], "'x' is not a number"),
    "--temperatures nan": (["answer", "--dataset", "{d}/dataset.jsonl", "--temperatures", "nan", "-o", "{out}/a.jsonl"], "not a finite number"),
    "missing .ttl": (["kg", "show", "--kg", "{d}/missing.ttl", "Q1"], "no such snapshot file"),
    "corrupt .ttl": (["kg", "show", "--kg", "{d}/bad.ttl", "Q1"], "not a valid turtle snapshot"),
    "corrupt oxigraph store": (["kg", "show", "--kg", "oxigraph:{d}/store", "Q1"], "not a readable snapshot or Oxigraph store"),
    "hf: missing path": (
        ["answer", "--dataset", "{d}/dataset.jsonl", "--retrieval", "gold", "--llm", "hf:{d}/no-model", "-o", "{out}/a.jsonl"],
        "cannot load the model",
    ),
    "hf-nli: missing path": (
        ["evaluate", "--dataset", "{d}/dataset.jsonl", "--answers", "{d}/answers.jsonl", "--nli", "hf-nli:{d}/no-model", "-o", "{out}/e"],
        "cannot load the model",
    ),
    "hf-seq2seq: missing path": (
        ["evaluate", "--dataset", "{d}/dataset.jsonl", "--answers", "{d}/answers.jsonl", "--nli", "hf-seq2seq:{d}/no-model", "-o", "{out}/e"],
        "cannot load the model",
    ),
    "openai: no key": (
        ["answer", "--dataset", "{d}/dataset.jsonl", "--retrieval", "gold", "--llm", "openai:gpt-4o-mini", "-o", "{out}/a.jsonl"],
        "set OPENAI_API_KEY",
    ),
    "--spacy nonexistent": (
        ["answer", "--dataset", "{d}/dataset.jsonl", "--spacy", "nonexistent", "-o", "{out}/a.jsonl"],
        "spaCy pipeline 'nonexistent' is not installed",
    ),
    "kg show 'Q1 }'": (["kg", "show", "Q1 }"], "not a Wikidata id: 'Q1 }'"),
    "kg import-biokalma, not JSON": (["kg", "import-biokalma", "{d}/release.json", "-o", "{out}/bk.nt"], "not a JSON release file"),
    "dataset import-biokalma, a graph without a QID": (
        ["dataset", "import-biokalma", "--specific", "{d}/noqid.json", "-o", "{out}/bk.jsonl"],
        "noqid.json: item 1, graph 0: field 'qid': not a Wikidata id: 5",
    ),
    "kg import-biokalma, a graph without a QID": (
        ["kg", "import-biokalma", "{d}/noqid.json", "-o", "{out}/bk.nt"],
        "noqid.json: item 1, graph 0: field 'qid': not a Wikidata id: 5",
    ),
    "dataset import-biokalma, not JSON": (["dataset", "import-biokalma", "--specific", "{d}/release.json", "-o", "{out}/bk.jsonl"], "not a JSON release file"),
    "dataset stats on answers": (["dataset", "stats", "{d}/answers.jsonl"], "expected a 'dataset' file, found 'answers'"),
    "build, a bare number": (
        ["build", "--records", "{d}/records.jsonl", "--lm", "smollm2", "-o", "{out}/built.jsonl"],
        "records.jsonl:2: expected a JSON object",
    ),
    "sparql:notaurl": (["kg", "lookup", "--kg", "sparql:notaurl", "X"], "'notaurl' is not an http(s) URL"),
    "unknown backend": (["answer", "--dataset", "{d}/dataset.jsonl", "--llm", "gpt4", "-o", "{out}/a.jsonl"], "unknown LLM backend 'gpt4'"),
    "table: missing file": (
        ["evaluate", "--dataset", "{d}/dataset.jsonl", "--answers", "{d}/answers.jsonl", "--nli", "table:{d}/none.jsonl", "-o", "{out}/e"],
        "table entailment: cannot read",
    ),
    "toml: temperature = hot": (["bench", "run", "{d}/hot.toml", "-o", "{out}/r"], "key 'temperature': Input should be a valid number"),
    "toml: seeds = '0,1'": (["bench", "run", "{d}/seeds.toml", "-o", "{out}/r"], "key 'seeds': Input should be a valid list"),
    "toml: accuracies = [1.5]": (["bench", "run", "{d}/accuracy.toml", "-o", "{out}/r"], "key 'experiments.retrieval.accuracies.0'"),
    "--metrics with options": (
        ["evaluate", "--dataset", "{d}/dataset.jsonl", "--answers", "{d}/answers.jsonl", "--metrics", "citation,conner:agg=mean,u=5", "-o", "{out}/e"],
        "Invalid value for --metrics: takes names only",
    ),
    "bench submit, bad metric option": (
        ["bench", "submit", "{d}/sub.jsonl", "--dataset", "{d}/dataset.jsonl", "--leaderboard", "{out}/b", "--metric", "na:relevance=maybe"],
        "option 'relevance'",
    ),
    "leaderboard: truncated submission.json": (
        ["leaderboard", "{d}/board-torn", "-o", "{out}/site"],
        "board-torn/submissions/x/submission.json:2: not valid JSON",
    ),
    "leaderboard: submission.json without scores": (
        ["leaderboard", "{d}/board-bare", "-o", "{out}/site"],
        "submission.json:1: field 'submission.model': Field required",
    ),
    "leaderboard: results.json of another kind": (["leaderboard", "{d}/board-runs", "-o", "{out}/site"], "results.json:1: field 'config': Field required"),
    "toml: dataset missing": (["bench", "run", "{d}/nodata.toml", "-o", "{out}/r"], "key 'dataset': no such file 'no/such/dataset.jsonl'"),
    "toml: empty": (["bench", "run", "{d}/empty.toml", "-o", "{out}/r"], "nothing to run"),
    "toml: llms = []": (["bench", "run", "{d}/nollms.toml", "-o", "{out}/r"], "key 'llms'"),
    "toml: nan": (["bench", "run", "{d}/nan.toml", "-o", "{out}/r"], "key 'temperature'"),
    "toml: broken": (["bench", "run", "{d}/broken.toml", "-o", "{out}/r"], "not valid TOML"),
    "toml: metric option": (["bench", "run", "{d}/option.toml", "-o", "{out}/r"], "key 'experiments.main.metrics.1': metric 'conner,agg=median': option 'agg'"),
    "toml: table without name": (["bench", "run", "{d}/nameless.toml", "-o", "{out}/r"], "key 'nli': a component table needs name"),
    "toml: unknown llm": (["bench", "run", "{d}/llm.toml", "-o", "{out}/r"], "key 'experiments.knowledge_removal.llms.0': unknown LLM backend 'smolm2'"),
    "toml: llm for llms": (["bench", "run", "{d}/llm_key.toml", "-o", "{out}/r"], "unknown key 'experiments.knowledge_removal.llm'. Did you mean 'llms'?"),
    "toml: a key the experiment does not use": (
        ["bench", "run", "{d}/unused_key.toml", "-o", "{out}/r"],
        "unknown key 'experiments.knowledge_removal.retrieval'",
    ),
    "check, a 0-byte file": (["check", "{d}/empty.jsonl", "--kind", "answers"], "empty.jsonl:1: empty file (0 bytes)"),
    "evaluate, 0-byte answers": (["evaluate", "--dataset", "{d}/dataset.jsonl", "--answers", "{d}/empty.jsonl", "-o", "{out}/e"], "empty file (0 bytes)"),
    "answer, 0-byte dataset": (["answer", "--dataset", "{d}/empty.jsonl", "-o", "{out}/a.jsonl"], "expected a 'dataset' file"),
    "dataset stats, blank file": (["dataset", "stats", "{d}/blank.jsonl"], "blank.jsonl:1: empty file (4 bytes, all blank)"),
    "retrieve, 0-byte dataset": (["retrieve", "--dataset", "{d}/empty.jsonl"], "empty file (0 bytes)"),
    "answer --temperatures -1": (["answer", "--dataset", "{d}/dataset.jsonl", "--temperatures", "-1", "-o", "{out}/a.jsonl"], "'-1' is below 0"),
    "answer --max-tokens 0": (
        ["answer", "--dataset", "{d}/dataset.jsonl", "--max-tokens", "0", "-o", "{out}/a.jsonl"],
        "'--max-tokens': 0 is not in the range",
    ),
    "answer --max-tokens -5": (["answer", "--dataset", "{d}/dataset.jsonl", "--max-tokens", "-5", "-o", "{out}/a.jsonl"], "'--max-tokens': -5"),
    "evaluate --metrics ''": (
        ["evaluate", "--dataset", "{d}/dataset.jsonl", "--answers", "{d}/answers.jsonl", "--metrics", "", "-o", "{out}/e"],
        "names no metric",
    ),
    "build, empty records": (["build", "--records", "{d}/empty.jsonl", "-o", "{out}/b.jsonl"], "empty.jsonl: no relation records"),
    "build, a CSV of other columns": (["build", "--records", "{d}/other.csv", "-o", "{out}/b.jsonl"], "other.csv:1: no column 'paragraph'"),
    "build, --columns paragraph=nope": (
        ["build", "--records", "{d}/other.csv", "--columns", "person_a=subj,relation=rel,person_b=obj,paragraph=nope", "-o", "{out}/b.jsonl"],
        "other.csv:1: no column 'nope'",
    ),
    "build, --columns without =": (["build", "--records", "{d}/other.csv", "--columns", "paragraph", "-o", "{out}/b.jsonl"], "give FIELD=COLUMN"),
    "build, --rounds -1": (["build", "--records", "{d}/records.jsonl", "--rounds", "-1", "-o", "{out}/b.jsonl"], "'--rounds': -1"),
    "kg show, a QID and a newline": (["kg", "show", "Q212657\n"], "not a Wikidata id: 'Q212657\\n'"),
    "kg show, an Arabic-Indic digit": (["kg", "show", "Q21\u0661"], "not a Wikidata id"),
    "hf: a hub id not in the local cache, offline": (
        ["answer", "--dataset", "{d}/dataset.jsonl", "--retrieval", "gold", "--llm", "hf:gpt2", "-o", "{out}/a.jsonl"],
        "'gpt2': it is not in the local Hugging Face cache and HF_HUB_OFFLINE is set; download it",
    ),
    "metric option misspelt": (
        ["evaluate", "--dataset", "{d}/dataset.jsonl", "--answers", "{d}/answers.jsonl", "--metric", "na:relevence=false", "-o", "{out}/e"],
        "metric 'na:relevence=false': unknown option 'relevence'; options: relevance, verbalized. Did you mean 'relevance'?",
    ),
    "metric option that is the run's own": (
        ["evaluate", "--dataset", "{d}/dataset.jsonl", "--answers", "{d}/answers.jsonl", "--metric", "na:options=1", "-o", "{out}/e"],
        "metric 'na:options=1': unknown option 'options'; options: relevance, verbalized.",
    ),
    "bench submit --answers": (
        ["bench", "submit", "--answers", "{d}/sub.jsonl", "--dataset", "{d}/dataset.jsonl", "--leaderboard", "{out}/b"],
        "the answers file is the first argument, not an option: kalma bench submit",
    ),
    "evaluate, a UTF-16 answers file": (
        ["evaluate", "--dataset", "{d}/dataset.jsonl", "--answers", "{d}/utf16.jsonl", "-o", "{out}/e"],
        "utf16.jsonl:1: UTF-16 text (by its byte order mark): save it as UTF-8",
    ),
    "evaluate --lenient, no answer readable": (
        ["evaluate", "--dataset", "{d}/dataset.jsonl", "--answers", "{d}/unreadable.jsonl", "--lenient", "-o", "{out}/e"],
        "unreadable.jsonl: no answer could be read (2 corrupt lines; `kalma check",
    ),
    "torn header": (["evaluate", "--dataset", "{d}/dataset.jsonl", "--answers", "{d}/torn.jsonl", "-o", "{out}/e"], "the header line is damaged"),
    "repeated header": (["check", "{d}/twice.jsonl", "--kind", "answers", "--lenient"], "a second header line"),
    "evaluate, a CSV of answers": (
        ["evaluate", "--dataset", "{d}/dataset.jsonl", "--answers", "{d}/answers.csv", "--lenient", "-o", "{out}/e"],
        "answers.csv:1: this is a CSV file (columns: entry_id, text), not JSON Lines: expected an 'answers' file, one JSON object per line",
    ),
    "dataset stats, an answers file without a header": (["dataset", "stats", "{d}/plain.jsonl"], "this is an 'answers' file (its lines hold entry_id, text)"),
    "evaluate, a JSON array cut off": (
        ["evaluate", "--dataset", "{d}/dataset.jsonl", "--answers", "{d}/cut.json", "-o", "{out}/e"],
        "(Unterminated string starting at line 1 column 56; the text ends inside it: was it cut off?)",
    ),
    "leaderboard, a folder that is no board": (["leaderboard", "{d}/not-a-board", "-o", "{out}/site"], "not-a-board is not a leaderboard folder"),
    "human score, a Label Studio CSV": (
        ["human", "score", "{fix}/align.sample.jsonl", "{fix}/align.csv", "-o", "{out}/h"],
        "align.csv:1: not a labels file of `kalma human import` (an annotators' CSV or a Label Studio export, by the look of it): import it first",
    ),
}


def test_an_answer_that_opens_with_thoughts_is_scored_and_flagged(files, tmp_path):
    entries = demo_entries(open_source("demo"))
    texts = ["<think>Maybe [Q212657, place of birth: Rome]?</think> Born in Rome [NA]."] + ["x [NA]."] * (len(entries) - 1)
    write_jsonl(tmp_path / "t.jsonl", [Answer(entry_id=e.id, text=t, model="m") for e, t in zip(entries, texts)], "answers")
    args = ["evaluate", "--dataset", str(files / "dataset.jsonl"), "--answers", str(tmp_path / "t.jsonl"), "--metrics", "citation"]
    res = CliRunner().invoke(main, [*args, "-o", str(tmp_path / "e")])
    assert res.exit_code == 1 and "t.jsonl: 1 answer opening with a model's reasoning; every valid answer was scored" in res.stderr.splitlines()[-1]
    summary = json.loads((tmp_path / "e" / "summary.json").read_text())
    assert summary["problems"]["reasoning_in_text"] == 1 and summary["counts"]["citations"] == 1  # scored as written
    assert CliRunner().invoke(main, [*args, "--lenient", "-o", str(tmp_path / "e2")]).exit_code == 0


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_user_error_is_one_line_and_a_non_zero_exit(files, tmp_path, monkeypatch, case):
    args, expected = CASES[case]
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    dead = dead_endpoint()
    fix = ROOT / "tests" / "fixtures" / "label_studio"
    args = [a.replace("{d}", str(files)).replace("{out}", str(tmp_path)).replace("{dead}", dead).replace("{fix}", str(fix)) for a in args]
    res = CliRunner().invoke(main, args, env={"KALMA_SPARQL_ATTEMPTS": "1", "KALMA_DEBUG": ""})
    err_lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.exit_code != 0, res.output
    assert isinstance(res.exception, SystemExit), f"escaped: {res.exception!r}"
    assert "Traceback" not in res.output
    assert len(err_lines) == 1 and err_lines[0].startswith("kalma: "), err_lines
    assert expected in err_lines[0], err_lines[0]
