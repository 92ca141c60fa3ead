"""Knowledge sources, one by one: batching, id validation, the endpoint client's behaviour
under faults, snapshots and the release import. What every source must answer alike is in
tests/contract/test_kg_sources.py."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kalma.cache import Cache
from kalma.kg import demo_snapshot_path, open_source
from kalma.kg.local import OxigraphSource, RdflibSource
from kalma.kg.remote import EndpointError, EndpointSource, RetryPolicy
from kalma.kg.snapshot import import_biokalma, write_snapshot
from kalma.kg.sparql import literal
from tests.kg_data import contract_snapshot
from tests.servers import SPARQL_OK, hang, reply, scripted_server, serve_snapshot
from tests.terminal import sigint_default


@pytest.fixture(scope="module")
def data_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return contract_snapshot(tmp_path_factory.mktemp("kg"))


def test_batched_subgraphs_take_three_round_trips(data_file):
    """Entity labels, claims, and the aliases of the properties used: three queries per batch."""
    src = OxigraphSource(data_file)
    graphs = src.subgraphs(["Q212657", "Q367360", "Q258115", "Q6439494", "Q206534"])
    assert src.round_trips == 3
    assert graphs["Q212657"].property_aliases["P19"] == ["birthplace", "born in"]
    assert "P19" not in graphs["Q206534"].property_aliases or any(t.relation == "P19" for t in graphs["Q206534"].triples)


def test_ids_are_validated_not_spliced():
    with pytest.raises(ValueError):
        RdflibSource(demo_snapshot_path()).subgraphs(["Q1 } ?s ?p ?o {"])
    assert literal("a\nb") == '"a\\nb"@en'


# ---------------------------------------------------------------- faults


def test_endpoint_survives_429_503_hang_then_succeeds(tmp_path):
    script = [reply(429, b"slow down", {"Retry-After": "1"}), reply(503), hang(3), reply(200, SPARQL_OK, {"Content-Type": "application/sparql-results+json"})]
    with scripted_server(script) as (url, log):
        src = EndpointSource(url, cache=Cache(tmp_path / "c.sqlite"), policy=RetryPolicy(attempts=5, timeout=1, backoff=0.05))
        t0 = time.time()
        assert src.lookup(["X"]) == {"X": ["Q42"]}
        elapsed = time.time() - t0
        assert len(log) == 4 and src.requests_sent == 4
        assert elapsed >= 1.0  # Retry-After: 1 was honoured
        assert all(r["headers"]["User-Agent"].startswith("kalma-bench/") for r in log)
        # a second run is served by the cache: no request leaves
        again = EndpointSource(url, cache=Cache(tmp_path / "c.sqlite"))
        assert again.lookup(["X"]) == {"X": ["Q42"]} and again.requests_sent == 0 and len(log) == 4


def test_endpoint_gives_up_after_budget():
    with scripted_server([reply(503)]) as (url, log):
        src = EndpointSource(url, cache=Cache(None), policy=RetryPolicy(attempts=3, timeout=2, backoff=0.01))
        with pytest.raises(EndpointError, match="gave up after 3 attempts: HTTP 503"):
            src.lookup(["X"])
        assert len(log) == 3


def test_empty_200_is_suspicious_and_retried():
    with scripted_server([reply(200, b""), reply(200, SPARQL_OK)]) as (url, log):
        src = EndpointSource(url, cache=Cache(None), policy=RetryPolicy(attempts=3, timeout=2, backoff=0.01))
        assert src.lookup(["X"]) == {"X": ["Q42"]} and len(log) == 2


def test_bad_query_is_not_retried():
    with scripted_server([reply(400, b"syntax error")]) as (url, log):
        src = EndpointSource(url, cache=Cache(None), policy=RetryPolicy(attempts=3, backoff=0.01))
        with pytest.raises(EndpointError, match="HTTP 400"):
            src.lookup(["X"])
        assert len(log) == 1


# ---------------------------------------------------------------- snapshots and import


def test_snapshot_from_a_server_round_trips(data_file, tmp_path):
    out = tmp_path / "snap.ttl"
    with serve_snapshot(data_file, tmp_path) as url:
        src = EndpointSource(url, cache=Cache(None))
        write_snapshot(src, ["Q212657", "Q367360"], out)
        expected = src.subgraphs(["Q212657", "Q367360"])
    assert RdflibSource(out).subgraphs(["Q212657", "Q367360"]) == expected


def test_a_snapshot_the_server_cannot_load_is_named(tmp_path):
    from kalma.errors import BackendError

    bad = tmp_path / "bad.nt"
    bad.write_text("<a> <b> this is not N-Triples .\n")
    with pytest.raises(BackendError, match=r"bad\.nt: oxigraph could not load it"):
        with serve_snapshot(bad, tmp_path):
            pass


def test_open_source_suggests():
    with pytest.raises(ValueError, match="Did you mean 'oxigraph'"):
        open_source("oxigraf:x.ttl")


@pytest.mark.shared
def test_import_biokalma_release(biokalma_dir, tmp_path):
    out = tmp_path / "bk.nt"
    stats = import_biokalma(biokalma_dir / "complex_question_graph.json", out)
    assert stats["people"] == 1076 and stats["facts"] > 15000
    src = OxigraphSource(out)
    crane = src.subgraphs(["Q206534"])["Q206534"]
    vals = {(t.relation_label, t.value_label) for t in crane.triples}
    assert ("place of birth", "Newark") in vals and ("date of birth", "1871-11-01") in vals
    assert src.lookup(["Stephen Crane"], ["Q5"]) == {"Stephen Crane": ["Q206534"]}
    minted = [t.value for t in crane.triples if t.relation_label == "place of birth"][0]
    assert minted.startswith("https://kalma.invalid/biokalma/value/")


def test_kg_serve_gives_an_endpoint_until_ctrl_c(tmp_path):
    """`kalma kg serve --kg SNAPSHOT`: the URL alone on stdout, queried as `sparql:URL`; Ctrl-C
    stops the server and exits 130, as docs/cli.md says of every command."""
    import signal
    import subprocess
    import sys
    import urllib.request

    from kalma.kg import open_source
    from kalma.kg.serve import free_port

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kalma.cli", "kg", "serve", "--kg", "demo", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_default,
    )
    try:
        url = proc.stdout.readline().strip()
        assert url == f"http://127.0.0.1:{port}/query"
        assert open_source(f"sparql:{url}").lookup(["Artemisia Gentileschi"], ["Q5"]) == {"Artemisia Gentileschi": ["Q212657"]}
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "kalma: interrupted: stopped serving" in err and f"--kg sparql:{url}" in err
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{url}?query=ASK%7B%7D", timeout=2)


# Ctrl-C delivered the moment the URL is written to stdout: what a script that reads the URL and
# stops the server at once can do before the server's process runs another line
_CTRL_C_ON_URL = """
import os, signal, sys, click
from kalma.cli import main
echo = click.echo
def echo_then_ctrl_c(message=None, *args, **kwargs):
    echo(message, *args, **kwargs)
    if not kwargs.get("err"):
        os.kill(os.getpid(), signal.SIGINT)
click.echo = echo_then_ctrl_c
main(["kg", "serve", "--kg", "demo", "--port", sys.argv[1]])
"""


def test_kg_serve_stopped_as_its_url_goes_out_says_so_and_stops_the_server():
    import signal
    import subprocess
    import sys
    import urllib.request

    from kalma.kg.serve import free_port

    port = free_port()
    done = subprocess.run([sys.executable, "-c", _CTRL_C_ON_URL, str(port)], capture_output=True, text=True, timeout=60, preexec_fn=sigint_default)
    url = f"http://127.0.0.1:{port}/query"
    assert done.stdout == url + "\n"
    assert done.returncode == 128 + signal.SIGINT
    assert done.stderr.endswith(f"kalma: interrupted: stopped serving {demo_snapshot_path()}\n"), done.stderr
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{url}?query=ASK%7B%7D", timeout=2)
