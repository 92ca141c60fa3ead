"""Every knowledge source answers in its language, the same answers on each: the five real
Wikidata entities of ../shared (labels in up to 299 languages; Q106975887 has none in German),
with real property labels, read by rdflib, pyoxigraph, an Oxigraph server and a local store
imported with `--languages en,fr,de,mul`. A label missing in the language is noted, never filled
in English unless the fallback is asked; a `mul` label stands for any language."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from kalma.errors import ConfigError
from kalma.kg import open_source
from kalma.kg.base import KnowledgeSource
from kalma.kg.dumps import entity_nt
from perf.wikidata_labels import label_in
from tests.conftest import SHARED

ENTITIES = SHARED / "data" / "wikidata-entities"
REAL = ("Q1", "Q42", "Q45", "Q513", "Q106975887")
pytestmark = pytest.mark.skipif(not ENTITIES.is_dir(), reason="../shared/data/wikidata-entities is not present")

# the properties the people's claims use, by their English label (`perf.wikidata_labels` holds the others)
PROPERTIES = {"P31": "instance of", "P21": "sex or gender", "P19": "place of birth", "P27": "country of citizenship", "P106": "occupation"}
PROPERTIES |= {"P569": "date of birth", "P570": "date of death", "P735": "given name", "P1477": "birth name"}
# values the entities name, with their real labels (en, fr, de); a given name has its label under `mul`, as Wikidata now stores them
VALUES = {
    "Q5": ("human", "être humain", "Mensch"),
    "Q6581097": ("male", "masculin", "männlich"),
    "Q6581072": ("female", "féminin", "weiblich"),
    "Q145": ("United Kingdom", "Royaume-Uni", "Vereinigtes Königreich"),
    "Q82955": ("politician", "personnalité politique", "Politiker"),
    "Q1009": ("Cameroon", "Cameroun", "Kamerun"),
}
MUL = {"Q16467697": "Marinette"}
BIRTH_NAME = {"en": "birth name", "fr": "nom de naissance", "de": "Geburtsname"}


def _entity(eid: str, labels: dict[str, str], datatype: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "property" if datatype else "item", "id": eid, "labels": {k: {"language": k, "value": v} for k, v in labels.items()}}
    return out | ({"datatype": datatype} if datatype else {}) | {"claims": {}}


def entities() -> list[dict[str, Any]]:
    """The five real entities, their properties and the values they name, as JSON dump entities."""
    found = [json.loads((ENTITIES / f"{q}.json").read_text())["entities"][q] for q in REAL]
    for pid, en in PROPERTIES.items():
        datatype = {"P569": "time", "P570": "time", "P1477": "monolingualtext"}.get(pid, "wikibase-item")
        labels = BIRTH_NAME if pid == "P1477" else {lang: label_in(en, lang) for lang in ("en", "fr", "de")}
        found.append(_entity(pid, labels, datatype))
    found += [_entity(q, dict(zip(("en", "fr", "de"), names))) for q, names in VALUES.items()]
    found += [_entity(q, {"mul": name}) for q, name in MUL.items()]
    return found


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from kalma.kg.store import import_dump
    from tests.servers import serve_snapshot

    folder = tmp_path_factory.mktemp("languages")
    nt = folder / "five.nt"
    nt.write_text("".join(line + "\n" for e in entities() for line in entity_nt(e, ("en", "fr", "de", "mul"))), encoding="utf-8")
    import_dump(nt, folder / "store", languages=("en", "fr", "de", "mul"), progress=False)
    with serve_snapshot(nt, folder / "ox") as url:
        yield {"nt": nt, "store": folder / "store", "url": url}


SPECS: dict[str, Callable[[dict[str, Any]], str]] = {
    "rdflib": lambda w: f"rdflib:{w['nt']}",
    "oxigraph": lambda w: f"oxigraph:{w['nt']}",
    "sparql": lambda w: f"sparql:{w['url']},attempts=2,timeout=10",
    "wikidata-local": lambda w: f"wikidata-local:{w['store']}",
}


def _answers(src: KnowledgeSource) -> dict[str, Any]:
    graphs = src.subgraphs([*REAL, "Q404"])
    return {
        "lookup": src.lookup(["Everest", "Mount Everest", "Douglas Adams", "Marinette Yetna", "Royaume-Uni", "Nobody"]),
        "graphs": {q: g.model_dump() for q, g in graphs.items()},
        "labels": src.labels([*REAL, *VALUES, *MUL]),
        "property_aliases": src.property_aliases(PROPERTIES),
        "missing": dict(sorted(src.notes.missing.items())),
        "fell_back": sorted(src.notes.fell_back),
    }


@pytest.mark.parametrize("lang,fallback", [("fr", None), ("de", None), ("de", "en")])
def test_every_source_answers_in_the_language_as_rdflib_does(world, lang, fallback):
    extra = f",lang={lang}" + (f",fallback={fallback}" if fallback else "")
    answers = {name: _answers(open_source(spec(world) + extra)) for name, spec in SPECS.items()}
    for name, got in answers.items():
        assert got == answers["rdflib"], name


def _texts(src: KnowledgeSource) -> set[str]:
    a = _answers(src)
    out = set(a["labels"].values())
    for g in a["graphs"].values():
        out |= {g["label"], *g["aliases"], *(t["relation_label"] for t in g["triples"])}
        out |= {t["value_label"] for t in g["triples"] if t["value_type"] == "item"}
    return out


@pytest.mark.parametrize("name", sorted(SPECS))
def test_labels_are_the_languages_own_and_a_missing_one_is_noted(world, name):
    fr = open_source(SPECS[name](world) + ",lang=fr")
    a = _answers(fr)
    assert a["lookup"]["Everest"] == ["Q513"] and a["lookup"]["Mount Everest"] == [] and a["lookup"]["Royaume-Uni"] == ["Q145"]
    assert a["labels"]["Q513"] == "Everest" and a["labels"]["Q145"] == "Royaume-Uni"
    yetna = {(t["relation_label"], t["value_label"]) for t in a["graphs"]["Q106975887"]["triples"]}
    assert ("nature de l'élément", "être humain") in yetna and ("pays de nationalité", "Cameroun") in yetna and ("sexe ou genre", "féminin") in yetna
    assert ("nom de naissance", "Ngo Yetna Marinette") in yetna  # monolingual text in French, kept in French
    assert ("prénom", "Marinette") in yetna  # a `mul` label stands for French
    adams = {(t["relation_label"], t["value_label"]) for t in a["graphs"]["Q42"]["triples"]}
    assert not any(r == "birth name" or r == "nom de naissance" for r, _ in adams)  # his is in English: not French text
    english = {"Mount Everest", "human", "United Kingdom", "instance of", "sex or gender", "female", "country of citizenship", "Cameroon"}
    assert not _texts(fr) & english
    de = open_source(SPECS[name](world) + ",lang=de")
    assert "Q106975887" not in de.labels(["Q106975887"]) or de.labels(["Q106975887"])["Q106975887"] == "Q106975887"
    assert de.notes.missing["Q106975887"].startswith("no label in de")
    assert de.lookup(["Marinette Yetna"]) == {"Marinette Yetna": []}
    allowed = open_source(SPECS[name](world) + ",lang=de,fallback=en")
    assert allowed.labels(["Q106975887", "Q42"]) == {"Q106975887": "Marinette Yetna", "Q42": "Douglas Adams"}
    assert allowed.notes.fell_back == {"Q106975887"} and "Q106975887" not in allowed.notes.missing


def test_a_store_opened_in_a_language_it_does_not_hold_is_refused_in_one_line(world):
    with pytest.raises(ConfigError, match=r"holds labels in en, fr, de, mul, not es: import the dump again with --languages en,fr,de,mul,es") as err:
        open_source(f"wikidata-local:{world['store']}", "es")
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="lang=fr but --language de"):
        open_source(f"wikidata-local:{world['store']},lang=fr", "de")
    with pytest.raises(ConfigError, match="is not a language tag"):
        open_source(f"rdflib:{world['nt']}", "fr!")
