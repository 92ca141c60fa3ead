"""First contact, sixth pass, through the CLI: nothing a user owns is destroyed by --overwrite, two
writers of one store are refused, a port in use is said, and nothing empty passes in silence."""

from __future__ import annotations

import gzip
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import time
from multiprocessing.context import ForkServerContext
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dataset_builder.demo import demo_entries
from kalma.cli import main
from kalma.jsonl import write_jsonl
from kalma.kg import open_source
from kalma.locks import OutputLock
from perf.dumpgen import write_dump
from tests.terminal import sigint_default

pytest.importorskip("duckdb")


def _run(args: list[str]) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, args)
    return res.exit_code, res.stdout, res.stderr


def _ok(args: list[str]) -> str:
    code, out, err = _run(args)
    assert code == 0, out + err
    return out + err


def _fails(args: list[str], *said: str) -> str:
    code, out, err = _run(args)
    assert code != 0 and "Traceback" not in err and len(err.strip().splitlines()) <= 2, out + err
    for s in said:
        assert s in err, err
    return err


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("dump")
    write_dump(work / "wikidata-20261118-truthy.nt.gz", 12, "nt", seed=2, with_release=False, named_only=True)
    return work / "wikidata-20261118-truthy.nt.gz"


@pytest.fixture(scope="module")
def store(dump, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("store") / "store"
    _ok(["kg", "import", str(dump), "-o", str(out), "--threads", "1"])
    return out


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _users_folder(root: Path) -> Path:
    folder = root / "mine"
    (folder / "sub").mkdir(parents=True)
    (folder / "thesis.tex").write_text("\\chapter{Years of work}")
    (folder / "sub" / "data.csv").write_text("a,b\n1,2\n")
    return folder


# ---------------------------------------------------------------- 1, 2: data loss and races


def test_overwrite_never_removes_a_folder_this_suite_did_not_write(dump, tmp_path):
    mine = _users_folder(tmp_path)
    before = _tree(mine)
    dataset = tmp_path / "d.jsonl"
    _ok(["dataset", "demo", "-o", str(dataset)])
    _ok(["human", "sample", "--dataset", str(dataset), "--task", "dataset", "-n", "2", "-o", str(tmp_path / "s.jsonl")])
    for args in (
        ["kg", "import", str(dump), "-o", str(mine), "--overwrite", "--threads", "1"],
        ["dataset", "publish", str(dataset), "-o", str(mine), "--license", "cc0-1.0", "--overwrite"],
        ["human", "export", str(tmp_path / "s.jsonl"), "-o", str(mine), "--overwrite"],
    ):
        _fails(args, f"{mine} holds files", "(sub, thesis.tex)", "nothing was removed")
        assert _tree(mine) == before, args[:2]
    # and what the suite wrote is replaced, whole
    _ok(["human", "export", str(tmp_path / "s.jsonl"), "-o", str(tmp_path / "exp")])
    _ok(["human", "export", str(tmp_path / "s.jsonl"), "-o", str(tmp_path / "exp"), "--overwrite"])
    assert sorted(p.name for p in (tmp_path / "exp").iterdir()) == ["annotate.csv", "instructions.md", "label-studio-config.xml", "label-studio-tasks.json"]


def test_a_failed_overwrite_leaves_the_store_as_it_was(dump, tmp_path):
    good = tmp_path / "good"
    _ok(["kg", "import", str(dump), "-o", str(good), "--threads", "1"])
    before = _tree(good)
    torn = tmp_path / "trunc.nt.gz"
    torn.write_bytes(gzip.compress(b"<http://www.wikidata.org/entity/Q1> <http://x> " * 2000)[:3000])
    _fails(["kg", "import", str(torn), "-o", str(good), "--overwrite", "--threads", "1"], str(torn))
    assert _tree(good) == before


def test_two_imports_into_one_store_are_refused_naming_the_holder(dump, tmp_path):
    with OutputLock(tmp_path / "store"):
        err = _fails(["kg", "import", str(dump), "-o", str(tmp_path / "store"), "--threads", "1"], "pid")
    assert str(os.getpid()) in err and not (tmp_path / "store").exists()


def test_kg_serve_on_a_port_in_use_says_so(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        _fails(["kg", "serve", "demo", "--port", str(port)], f"port {port} is in use")


def _children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _served_folders(pid: int) -> set[Path]:
    """The folder holding the store a server process serves (`--location STORE`)."""
    args = (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0")
    return {Path(args[i + 1].decode()).parent for i, a in enumerate(args[:-1]) if a == b"--location"}


def test_sigterm_stops_kg_serve_and_its_server_and_removes_its_folder():
    from kalma.kg.serve import free_port

    command = [sys.executable, "-m", "kalma.cli", "kg", "serve", "demo", "--port", str(free_port())]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip() if proc.stdout else ""
        assert url.startswith("http://127.0.0.1:"), proc.stderr.read() if proc.stderr else ""
        servers = _children(proc.pid)
        assert servers
        folders = {f for s in servers for f in _served_folders(s)}  # its own: other workers serve beside it
        assert folders and all(f.name.startswith("kalma-serve-") for f in folders)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
        assert not any(_alive(s) for s in servers)
        assert not [f for f in folders if f.exists()]
    finally:
        proc.kill()


# ---------------------------------------------------------------- 46: kills at any moment


def test_an_import_killed_before_its_first_checkpoint_resumes(dump, tmp_path):
    store = tmp_path / "store"
    (store / "parts").mkdir(parents=True)  # what a kill between creating the folder and its first checkpoint leaves
    _ok(["kg", "import", str(dump), "-o", str(store), "--threads", "1"])
    assert (store / "meta.json").is_file()


def test_a_finished_import_run_again_is_done_not_refused(dump, store):
    out = _ok(["kg", "import", str(dump), "-o", str(store), "--threads", "1"])
    assert "already holds this import" in out


def test_no_parser_outlives_a_killed_import(tmp_path):
    """The JSON dump is parsed in worker processes (N-Triples in threads: nothing to outlive)."""
    big = tmp_path / "big.json"
    write_dump(big, 1500, "json", seed=3, with_release=False)  # its import lasts seconds: the parsers are seen long before its end
    command = [sys.executable, "-m", "kalma.cli", "kg", "import", str(big), "-o", str(tmp_path / "s"), "--threads", "2"]
    proc = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        workers: set[int] = set()
        while time.time() < deadline and len(workers) < 2 and proc.poll() is None:
            workers = _children(proc.pid)
            time.sleep(0.05)
        assert len(workers) >= 2, "the import ended before its parsers could be seen"
        proc.kill()  # SIGKILL: no cleanup runs in the import
        proc.wait()
        deadline = time.time() + 10
        while time.time() < deadline and any(_alive(w) for w in workers):
            time.sleep(0.1)
        assert not any(_alive(w) for w in workers)
    finally:
        proc.kill()
    _ok(["kg", "import", str(big), "-o", str(tmp_path / "s"), "--threads", "2"])  # and the same command resumes it


IMPORT_ARGS: dict[str, Any] = {"progress": False, "part_rows": 500, "block_size": 64 * 1024}


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A dump of 400 people (some thirty parts of 500 rows), plain and gzipped: written once."""
    work = tmp_path_factory.mktemp("big")
    write_dump(work / "big.nt", 400, "nt", seed=5, with_release=False)
    (work / "big.nt.gz").write_bytes(gzip.compress((work / "big.nt").read_bytes(), compresslevel=1))
    return {"nt": work / "big.nt", "nt.gz": work / "big.nt.gz"}


@pytest.fixture(scope="module")
def imported_once(big: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """`big` imported in a single run, never killed (the .gz holds the same lines: one for both)."""
    from kalma.kg.store import import_dump

    once = tmp_path_factory.mktemp("once") / "store"
    return once, import_dump(big["nt"], once, **IMPORT_ARGS)


@pytest.fixture(scope="module")
def importer() -> ForkServerContext:
    """Processes forked from a server that has imported what an import needs once: each killed
    import starts in milliseconds, not the second a fresh interpreter takes to import it all."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["kalma.kg.store", "kalma.kg.columnar", "polars", "pyarrow.parquet", "tqdm"])  # what an import loads
    return context


@pytest.mark.parametrize("suffix", ["nt", "nt.gz"])
def test_an_import_killed_again_and_again_while_parts_are_written_ends_as_one_never_killed(tmp_path, suffix, big, imported_once, importer):
    """SIGKILL at several moments of an N-Triples import (parts are written in a thread of their
    own, the checkpoint after them), each time resumed by the same call: the store equals, table
    for table, one imported in a single run. A .gz is decoded in a thread of its own and cannot
    seek: its resumption reads up to the checkpoint again."""
    import duckdb

    from kalma.kg.store import import_dump

    store, parts = tmp_path / "killed", tmp_path / "killed" / "parts"
    seen: set[str] = set()
    for _ in range(4):
        proc = importer.Process(target=import_dump, args=(big[suffix], store), kwargs=IMPORT_ARGS)
        proc.start()
        try:
            deadline = time.time() + 60
            while time.time() < deadline and proc.exitcode is None:
                now = {p.name for p in parts.glob("*.parquet")} if parts.is_dir() else set()
                if now - seen:  # a part more since the last kill: kill now, mid-stream
                    seen |= now
                    break
                time.sleep(0.005)
        finally:
            proc.kill()  # SIGKILL
            proc.join()
    assert seen, "the import ended before a part was seen"
    killed = import_dump(big[suffix], store, **IMPORT_ARGS)
    once, single = imported_once
    assert killed["rows"] == single["rows"] and killed["read"]["rows_before_dedup"] == single["read"]["rows_before_dedup"]
    con = duckdb.connect()
    for name in ("labels", "claims", "properties"):
        rows = [con.execute(f"SELECT * FROM read_parquet('{folder / name}/*.parquet') ORDER BY ALL").fetchall() for folder in (store, once)]
        assert rows[0] == rows[1], name


# ---------------------------------------------------------------- 4, 5, 10: publish, identity


def test_a_dataset_kalma_build_did_not_make_publishes_loadably_and_says_so(tmp_path):
    import datasets
    import yaml

    _ok(["dataset", "demo", "-o", str(tmp_path / "d.jsonl")])
    _fails(["dataset", "publish", str(tmp_path / "d.jsonl"), "-o", str(tmp_path / "pub"), "--license", "my license"], "license identifier")
    _ok(["dataset", "publish", str(tmp_path / "d.jsonl"), "-o", str(tmp_path / "pub"), "--license", "cc0-1.0"])
    rows = datasets.load_dataset(str(tmp_path / "pub"), split="test", cache_dir=str(tmp_path / "hf"))
    assert len(rows) == 6 and not (tmp_path / "pub" / "removed").exists()
    text = (tmp_path / "pub" / "README.md").read_text()
    meta = yaml.safe_load(text.split("---")[1])
    assert [c["config_name"] for c in meta["configs"]] == ["default"]
    assert "not made by `kalma build`" in text and "| ? |" not in text and "queried on" not in text


def test_a_reimported_store_keeps_its_identity(dump, store, tmp_path):
    from kalma.resume import path_digest

    before = path_digest(store)
    copy = tmp_path / "again"
    _ok(["kg", "import", str(dump), "-o", str(copy), "--threads", "1"])
    meta = json.loads((copy / "meta.json").read_text())
    assert meta["created"] or meta["read"]["seconds"] >= 0  # made anew: its timings are its own
    _ok(["kg", "import", str(dump), "-o", str(store), "--overwrite", "--threads", "1"])
    assert path_digest(store) == before


# ---------------------------------------------------------------- 6, 7, 8: verdicts, ALCE, export


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("scored")
    entries = demo_entries(open_source("demo"))
    write_jsonl(root / "d.jsonl", entries, "dataset")
    t = entries[0].knowledge_pool.entities[0].triples[0]
    line = {"entry_id": entries[0].id, "text": f"It rained all day. She painted [{t.subject}, {t.relation_label}: {t.value_label}].", "model": "m"}
    (root / "a.jsonl").write_text(json.dumps(line) + "\n")
    _ok(["evaluate", "--dataset", str(root / "d.jsonl"), "--answers", str(root / "a.jsonl"), "--metrics", "citation,na", "--limit", "1", "-o", str(root / "e")])
    return root


def test_the_verdict_page_counts_sentences_with_neither(scored):
    page = (scored / "e" / "verdicts.html").read_text()
    assert "sentences with neither citation nor [NA] (1)" in page and "Sentences with neither a citation nor [NA]: 1." in page


def test_an_alce_file_saved_on_one_line_is_read_as_alce(scored, tmp_path):
    from kalma.jsonl import read_jsonl
    from kalma.schema import DatasetEntry

    entries = list(read_jsonl(scored / "d.jsonl", DatasetEntry, kind="dataset"))
    data = [{"question": e.specific_question, "output": "I do not know [NA]."} for e in entries[:2]]
    (tmp_path / "alce.json").write_text(json.dumps({"args": {"model": "alce-model"}, "data": data}))
    out = _ok(["evaluate", "--dataset", str(scored / "d.jsonl"), "--answers", str(tmp_path / "alce.json"), "--metrics", "citation", "-o", str(tmp_path / "e")])
    assert "ALCE result file: 2 of 2 items matched" in out


def test_verdicts_export_writes_what_its_name_says(scored, tmp_path):
    import pandas as pd

    scores = scored / "e" / "scores.jsonl"
    _ok(["export", str(scores), "--verdicts", "-o", str(tmp_path / "flat.csv")])
    csv = pd.read_csv(tmp_path / "flat.csv")
    assert list(csv.columns)[:2] == ["answer_id", "entry_id"] and len(csv) >= 1
    _ok(["export", str(scores), "--verdicts", "-o", str(tmp_path / "flat.parquet")])
    assert len(pd.read_parquet(tmp_path / "flat.parquet")) == len(csv)
    _fails(["export", str(scores), "-o", str(tmp_path / "records.csv")], "records are nested")


# ---------------------------------------------------------------- 9, 11: nothing empty in silence


def test_imports_that_find_nothing_say_so(dump, tmp_path):
    (tmp_path / "empty.txt").write_text("\n")
    _fails(["kg", "import", str(dump), "-o", str(tmp_path / "a"), "--qids", str(tmp_path / "empty.txt")], "lists no QID")
    err = _ok(["kg", "import", str(dump), "-o", str(tmp_path / "b"), "--classes", "Q55555", "--threads", "1"])
    assert "no item in the dump is an instance (P31) of Q55555" in err
    err = _ok(["kg", "import", str(dump), "-o", str(tmp_path / "c"), "--lang", "xx", "--threads", "1"])
    assert "no label, alias or description in language 'xx'" in err
    plain = tmp_path / "nodirect.nt"
    lines = gzip.decompress(dump.read_bytes()).decode().splitlines()
    plain.write_text("\n".join(x for x in lines if "directClaim" not in x) + "\n")
    err = _ok(["kg", "import", str(plain), "-o", str(tmp_path / "d"), "--threads", "1"])
    assert "no wikibase:directClaim lines" in err


def test_lookups_that_find_nothing_say_so(store, tmp_path):
    _fails(["kg", "show", "--kg", f"wikidata-local:{store}", "Q999999999999"], "not in wikidata-local:", "Q999999999999")
    _fails(["kg", "snapshot", "--kg", f"wikidata-local:{store}", "--qids", "Q999999999", "-o", str(tmp_path / "s.nt")], "holds nothing about Q999999999")
    assert not (tmp_path / "s.nt").exists()
    _fails(["kg", "lookup", "--kg", f"wikidata-local:{store}", "--class", "human", "Nobody"], "human")
    code, out, err = _run(["kg", "lookup", "Nobody Atall"])
    assert code == 0 and "not found in demo: Nobody Atall" in err


def test_a_model_whose_answers_cite_nothing_is_said(scored, tmp_path):
    entries = [json.loads(x) for x in (scored / "d.jsonl").read_text().splitlines()[1:]]
    (tmp_path / "b.jsonl").write_text("".join(json.dumps({"entry_id": e["id"], "text": "I cannot say.", "model": "model-b"}) + "\n" for e in entries))
    out = _ok(
        ["human", "sample", "--dataset", str(scored / "d.jsonl"), "--answers", f"m={scored / 'a.jsonl'}", "--answers", f"model-b={tmp_path / 'b.jsonl'}"]
        + ["-o", str(tmp_path / "s.jsonl")]
    )
    assert "model-b: 0 of 0 pairs (no citations)" in out


# ---------------------------------------------------------------- 12, 13, 14: reruns, names, messages


def test_damaged_stores_are_one_line_naming_the_file(dump, store, tmp_path):
    import shutil

    from kalma.kg.store import import_dump

    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    (copy / "meta.json").write_text('{"kalma_store": 1,\n')
    _fails(["kg", "show", "--kg", f"wikidata-local:{copy}", "Q1"], f"{copy / 'meta.json'}: not readable JSON", "--overwrite")
    partial = tmp_path / "partial"
    from tests.unit.test_wikidata_dumps import Stopped, stop_at

    with pytest.raises(Stopped):  # stopped after its second part, as a kill would
        import_dump(dump, partial, progress=False, part_rows=50, threads=1, block_size=1024, on_checkpoint=stop_at(2))
    sorted((partial / "parts").glob("*-00000.parquet"))[0].write_bytes(b"PAR1 torn")
    _fails(["kg", "import", str(dump), "-o", str(partial), "--threads", "1"], "a part is damaged", "--overwrite")


def test_one_malformed_line_is_one_line_and_check_names_its_flag(dump, tmp_path):
    text = gzip.decompress(dump.read_bytes()).decode()
    torn = "<http://www.wikidata.org/entity/Q9> <http://www.wikidata.org/prop/direct/P31> <http://www.wikidata.org/entity/Q5>"  # no final dot
    (tmp_path / "one.nt").write_text(text + torn + "\n")
    out = _ok(["kg", "import", str(tmp_path / "one.nt"), "-o", str(tmp_path / "s"), "--threads", "1"])
    assert "; 1 malformed line\n" in out
    (tmp_path / "bad.jsonl").write_text('{"entry_id": "x"}\nnot json\n')
    code, out, err = _run(["check", str(tmp_path / "bad.jsonl"), "--kind", "answers", "--all-errors"])
    assert code == 1 and f"{tmp_path / 'bad.jsonl'}:2: invalid JSON" in out + err


def test_ctrl_c_on_an_import_says_how_to_go_on(tmp_path, big):
    command = [sys.executable, "-m", "kalma.cli", "kg", "import", str(big["nt"]), "-o", str(tmp_path / "s"), "--threads", "2"]
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, preexec_fn=sigint_default)
    deadline = time.time() + 60
    while time.time() < deadline and not (tmp_path / "s" / "parts" / "checkpoint.json").exists() and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "run the same command again to resume it" in err and "Traceback" not in err
