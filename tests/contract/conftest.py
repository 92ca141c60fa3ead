"""What the contract tests share: the KG data and its server, tiny random transformers models
built once per session, and a local OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.kg_data import contract_snapshot
from tests.servers import echo_completion, scripted_server, serve_snapshot


@pytest.fixture(scope="session")
def kg_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return contract_snapshot(tmp_path_factory.mktemp("kg"))


@pytest.fixture(scope="session")
def kg_store(kg_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same data as a local Wikidata store: written as N-Triples, imported as a dump."""
    import rdflib

    from kalma.kg.store import import_dump

    folder = tmp_path_factory.mktemp("store")
    graph = rdflib.Graph()
    graph.parse(str(kg_data))
    graph.serialize(str(folder / "contract.nt"), format="nt", encoding="utf-8")
    import_dump(folder / "contract.nt", folder / "store", progress=False)
    return folder / "store"


@pytest.fixture(scope="session")
def kg_server(kg_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve_snapshot(kg_data, tmp_path_factory.mktemp("ox")) as url:
        yield url


@pytest.fixture(scope="session")
def openai_server() -> Iterator[str]:
    """Base URL (…/v1) of a local OpenAI-compatible server that echoes in upper case."""
    with scripted_server([echo_completion]) as (url, _):
        yield f"{url}/v1"


class TinyModels:
    """Random-weight models of each kind, built on first use in one session folder."""

    def __init__(self, root: Path):
        self.root = root
        self._built: dict[str, Path] = {}

    def _get(self, name: str, build: Callable[[Path], Path]) -> str:
        if name not in self._built:
            self._built[name] = build(self.root / name)
        return str(self._built[name])

    @property
    def causal(self) -> str:
        from perf.random_models import build_causal

        return self._get("causal", lambda p: build_causal(p, positions=1024))  # room for a G-Eval prompt

    @property
    def t5(self) -> str:
        from perf.random_models import build_t5

        return self._get("t5", build_t5)

    @property
    def nli(self) -> str:
        from perf.random_models import build_bert_nli

        return self._get("nli", build_bert_nli)

    @property
    def ranker(self) -> str:
        from perf.random_models import build_bert_classifier

        return self._get("ranker", lambda p: build_bert_classifier(p, {0: "LABEL_0"}))

    @property
    def coherence(self) -> str:
        from perf.random_models import build_bert_classifier

        return self._get("coherence", lambda p: build_bert_classifier(p, {0: "incoherent", 1: "coherent"}))


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> TinyModels:
    return TinyModels(tmp_path_factory.mktemp("tiny-models"))
