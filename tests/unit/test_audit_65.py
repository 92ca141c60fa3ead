"""Issue 65 §1: behaviours of the judge, class and statistics code that each have a test here failing
when they break (the mutations are kept in tests/mutations/), on cases where the wrong computation
gives another answer."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from evaluation.uncertainty import paired


def _micro(s):
    return s["hit"] / s["n"]


def test_the_paired_interval_is_at_the_level_it_records():
    """On six entries, every one of the 6^6 joint resamples enumerated: the paired interval of A - B
    is their 2.5th and 97.5th percentiles (a 90% interval lies ~0.03 inside on both ends)."""
    a = {"hit": np.array([3.0, 1.0, 4.0, 0.0, 2.0, 5.0]), "n": np.array([4.0, 2.0, 5.0, 1.0, 4.0, 5.0])}
    b = {"hit": np.array([3.0, 0.0, 3.0, 1.0, 2.0, 4.0]), "n": np.array([4.0, 3.0, 5.0, 2.0, 4.0, 5.0])}
    every = np.array(list(itertools.product(range(6), repeat=6)))
    w = np.stack([np.bincount(row, minlength=6) for row in every]).astype(float)
    diffs = _micro({k: w @ v for k, v in a.items()}) - _micro({k: w @ v for k, v in b.items()})
    low, high = np.quantile(diffs, [0.025, 0.975])
    got = paired(a, b, {"micro": _micro}, resamples=20_000, seed=5)["micro"]
    assert got.level == 0.95 and got.low == pytest.approx(low, abs=0.01) and got.high == pytest.approx(high, abs=0.01)


# ---------------------------------------------------------------- judge pairs: replacement values

WORLD_TTL = """
@prefix wd: <http://www.wikidata.org/entity/> .
@prefix wdt: <http://www.wikidata.org/prop/direct/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix wikibase: <http://wikiba.se/ontology#> .
wd:P31 wikibase:directClaim wdt:P31 ; rdfs:label "instance of"@en .
wd:P138 wikibase:directClaim wdt:P138 ; rdfs:label "named after"@en .
wd:P19 wikibase:directClaim wdt:P19 ; rdfs:label "place of birth"@en .
wd:Q5 rdfs:label "human"@en .
wd:Q515 rdfs:label "city"@en .
wd:Q900000001 rdfs:label "Ada Roe"@en ; wdt:P31 wd:Q5 ; wdt:P138 wd:Q900000101 ; wdt:P19 wd:Q900000101 .
wd:Q900000002 rdfs:label "Ben Moss"@en ; wdt:P31 wd:Q5 ; wdt:P138 wd:Q900000201 ; wdt:P19 wd:Q900000103 .
wd:Q900000003 rdfs:label "Cy Lake"@en ; wdt:P31 wd:Q5 ; wdt:P138 wd:Q900000102 ; wdt:P19 wd:Q900000102 .
wd:Q900000101 rdfs:label "Springfield"@en ; wdt:P31 wd:Q515 .
wd:Q900000102 rdfs:label "Ravenna"@en ; wdt:P31 wd:Q515 .
wd:Q900000103 rdfs:label "Springfield"@en ; wdt:P31 wd:Q515 .
wd:Q900000201 rdfs:label "Dora Finch"@en ; wdt:P31 wd:Q5 .
"""
ADA = "Q900000001"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):
    from evaluation.judge_pairs import World
    from kalma.kg import open_source

    path = tmp_path_factory.mktemp("world") / "kg.ttl"
    path.write_text(WORLD_TTL, encoding="utf-8")
    return World.of(open_source(f"rdflib:{path}"), [ADA, "Q900000002", "Q900000003"])


def _replacements(world, prop: str) -> set[str]:
    from kalma.seeds import rng

    (t,) = [t for t in world.graphs[ADA].triples if t.relation == prop]
    return {r.value for k in range(40) if (r := world.replacement(t, rng(k, "audit"))) is not None}


def test_a_contradictory_value_is_of_the_true_values_class(world):
    """Ada is named after the city Springfield; the KG's other values of "named after" are the city
    Ravenna and the person Dora Finch: the replacement is always Ravenna, never the person."""
    assert _replacements(world, "P138") == {"Q900000102"}


def test_a_replacement_named_like_a_true_value_is_no_contradiction(world):
    """Ada was born in Springfield (Q900000101); Ben in another city also labelled Springfield
    (Q900000103): a sentence saying Ada was born in Springfield is true, so only Ravenna replaces it."""
    assert _replacements(world, "P19") == {"Q900000102"}


def test_a_stated_value_is_found_as_a_whole_word_accents_folded():
    from evaluation.judge_pairs import mentions

    assert not mentions("Ada Roe is female.", ["male"]) and mentions("Ada Roe is male.", ["male"])
    assert mentions("She was born in Dala.", ["Dála"]) and mentions("She was born in Dála.", ["Dala"])


# ---------------------------------------------------------------- judge evaluate: the failed kinds


def test_a_kind_fails_only_when_its_whole_interval_lies_below_and_the_worst_comes_first(tmp_path):
    """Four kinds, every pair its own sentence (its own resampling unit): `good` all right, `z` all
    wrong, `a` right on 4 of 20, `c` on 2 of 4. Overall balanced accuracy 0.72: c's point (0.5) lies
    below it but its interval (to 1.0) does not, so only z and a fail, z (0.0) before a (0.2)."""
    from evaluation.judge_quality import markdown, measure, read_pairs

    rows = [("good", 1, 0.9)] * 20 + [("good", 0, 0.1)] * 20 + [("z", 1, 0.1)] * 10 + [("a", 1, 0.9)] * 4 + [("a", 1, 0.1)] * 16
    rows += [("c", 1, 0.9), ("c", 1, 0.1), ("c", 0, 0.1), ("c", 0, 0.9)]
    pairs, table = tmp_path / "pairs.jsonl", tmp_path / "judge.jsonl"
    text = [(f"Sentence {i} of {k}.", f"claim: {i}", y, k, p) for i, (k, y, p) in enumerate(rows)]
    pairs.write_text("".join(json.dumps({"doc": d, "claim": h, "label": y, "dataset": "x", "kind": k}) + "\n" for d, h, y, k, _ in text))
    table.write_text("".join(json.dumps({"premise": d, "hypothesis": h, "probability": p}) + "\n" for d, h, _, _, p in text))
    report = measure(f"table:{table}", read_pairs(pairs), 0.5, resamples=2000, seed=3)
    overall, c = report.intervals["overall"].point, report.kind_intervals["c"]
    assert overall == pytest.approx(0.5 * (25 / 52 + 21 / 22)) and c.point == 0.5 < overall < c.high  # type: ignore[operator]
    assert report.weakest() == ["z", "a"]
    assert "Fails most on: z (0.0), a (20.0)" in markdown(report)


def test_the_self_judging_warning_knows_one_model_however_it_is_written():
    """The G-Eval judge and the answers' model named by backend spec, by a served model's id in
    another case, by hub id or by a local folder: one model; another model is not it."""
    from evaluation.text_quality import self_judged

    names = ["hf:Org/Name,dtype=bf16", "openai-compatible:http://127.0.0.1:8000/v1:org/name", "Org/Name", "hf:/models/Org/Name"]
    assert all(self_judged(judge, [answers]) for judge in names for answers in names)
    assert not any(self_judged(judge, ["Org/Other"]) for judge in names)


def test_a_refusing_server_is_tried_again_at_half_a_second_then_doubling_to_every_five(monkeypatch: pytest.MonkeyPatch):
    """A real port that refuses, waited for 30 s on a clock that the pauses advance: tried again after
    0.5, 1, 2 and 4 s, then every 5 s, the last pause cut to what is left of the wait."""
    import socket
    import types

    from kalma.errors import BackendError
    from kalma.models import openai_backend

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    now, pauses = [0.0], []

    def sleep(seconds: float) -> None:
        pauses.append(seconds)
        now[0] += seconds

    monkeypatch.setattr(openai_backend, "time", types.SimpleNamespace(monotonic=lambda: now[0], sleep=sleep))
    with pytest.raises(BackendError, match="10 attempts"):
        openai_backend.reachable(f"http://127.0.0.1:{port}/v1", "openai-compatible", wait=30)
    assert pauses == [0.5, 1, 2, 4, 5, 5, 5, 5, 2.5]
