"""The contract every model backend keeps, run against every registered LLM, entailment
backend, LM scorer and text scorer, each built from its spec string on real local parts (tiny
random transformers models, SmolLM2 from its wheel, a local OpenAI-compatible server):

- one answer per input, in input order, and none for no input;
- values in their range (probabilities in [0, 1], log-probabilities <= 0, spans inside the text);
- the same input gives the same answer (fresh cache, temperature 0);
- the spec it reports names the registry entry that built it, so every number can be labelled.

A new backend adds its case to the tables below; a registered backend without one fails."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kalma.cache import Cache
from kalma.models import ENTAILMENT, LLMS, MATCHERS, SCORERS, GenParams, get_entailment, get_llm, get_matcher, get_scorer
from tests.contract.conftest import TinyModels

Env = tuple[TinyModels, str, Path]  # (tiny models, OpenAI-compatible base URL, a scratch folder)

LLM_CASES: dict[str, Callable[[Env], str]] = {
    "template": lambda env: "template",
    "smollm2": lambda env: "smollm2",
    "hf": lambda env: f"hf:{env[0].causal}",
    "openai-compatible": lambda env: f"openai-compatible:{env[1]}:served-model",
    "openai": lambda env: "openai:gpt-test",  # its fixed API address is pointed at the local server below
}
ENTAILMENT_CASES: dict[str, Callable[[Env], str]] = {
    "lexical": lambda env: "lexical",
    "hf-nli": lambda env: f"hf-nli:{env[0].nli}",
    "hf-seq2seq": lambda env: f"hf-seq2seq:{env[0].t5}",
    "llm": lambda env: f"llm:hf:{env[0].causal}",
    "table": lambda env: f"table:{env[2] / 'judgements.jsonl'}",
    "minicheck-t5": lambda env: f"minicheck-t5:{_checker(env, 'minicheck-t5')}",
    "minicheck": lambda env: f"minicheck:{_checker(env, 'minicheck-roberta')}",
    "factcg": lambda env: f"factcg:{_checker(env, 'factcg')}",
    "alignscore": lambda env: f"alignscore:{_checker(env, 'alignscore')}",
    "hhem": lambda env: f"hhem:{_checker(env, 'hhem')}",
    "served-judge": lambda env: f"served-judge:{env[1]}:served-model",
}
SCORER_CASES: dict[str, Callable[[Env], str]] = {
    "hf": lambda env: f"hf:{env[0].causal}",
    "smollm2": lambda env: "smollm2",
    "openai-compatible": lambda env: f"openai-compatible:{env[1]}:served-model",
}
MATCHER_CASES: dict[str, Callable[[Env], str]] = {
    "minilm": lambda env: "minilm",
    "cross-encoder": lambda env: f"cross-encoder:{env[0].ranker}",
    "hf-cls": lambda env: f"hf-cls:{env[0].coherence}",
}
SLOW = {"smollm2"}  # loads the packaged SmolLM2 weights

PAIRS = [
    ("Artemisia Gentileschi was born in Rome.", "place of birth: Rome"),
    ("She was a painter.", "occupation: painter"),
    ("She died in Naples.", "place of birth: Rome"),
    ("Artemisia Gentileschi was born in Rome.", "place of birth: Rome"),  # a repeat
    ("", "occupation: painter"),  # an empty premise
]
TEXTS = ["she was born in rome .", "painter", "Stephen Crane wrote The Red Badge of Courage."]
CONTEXTS = ["Question: where was she born?", "", "Knowledge: Stephen Crane, notable work: The Red Badge of Courage"]


_CHECKERS: dict[Path, dict[str, str]] = {}


def _checker(env: Env, kind: str) -> str:
    """The argument of a tiny random checker of `kind` (tests/checker_models), all of them built
    once in the scratch folder."""
    from tests import checker_models as cm

    if env[2] not in _CHECKERS:
        _CHECKERS[env[2]] = cm.specs(cm.build_checkers(env[2] / "checkers"))
    return _CHECKERS[env[2]][kind].partition(":")[2]


def test_every_registered_backend_has_a_case():
    assert sorted(LLM_CASES) == sorted(LLMS.names())
    assert sorted(ENTAILMENT_CASES) == sorted(ENTAILMENT.names())
    assert sorted(SCORER_CASES) == sorted(SCORERS.names())
    assert sorted(MATCHER_CASES) == sorted(MATCHERS.names())


@pytest.fixture(scope="module")
def env(tiny: TinyModels, openai_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    scratch = tmp_path_factory.mktemp("backends")
    # The table backend answers from a file of judgements: one row per pair, [NA]-relevance included.
    rows = [{"premise": p, "hypothesis": h, "probability": 0.9 if p.endswith("Rome.") else 0.1} for p, h in PAIRS]
    (scratch / "judgements.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    # AlignScore's and HHEM's tiny conversions go to a scratch folder, not the user's; SmolLM2's
    # conversion is linked in, since converting it again costs half a minute a run.
    from kalma.models.smollm2 import converted_dir

    (scratch / "converted").mkdir()
    (scratch / "converted" / converted_dir().name).symlink_to(converted_dir())
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("kalma.models.openai_backend.OPENAI_API", openai_server)
        mp.setenv("OPENAI_API_KEY", "sk-contract-test")
        mp.setenv("KALMA_MODEL_DIR", str(scratch / "converted"))
        yield tiny, openai_server, scratch


def _params(cases: dict[str, Callable[[Env], str]]) -> list:
    return [pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name for name in sorted(cases)]


@pytest.mark.parametrize("name", _params(LLM_CASES))
def test_llm(name: str, env: Env):
    spec = LLM_CASES[name](env)
    llm = get_llm(spec)
    assert llm.spec.startswith(name)
    chats = [[{"role": "user", "content": c}] for c in ("Where was Artemisia Gentileschi born?", "Who was her father?", "")]
    params = GenParams(temperature=0.0, max_tokens=8, seed=0)
    first = llm.chat_many(chats, params, cache=Cache(None))
    assert len(first) == 3 and all(isinstance(g.text, str) for g in first)
    assert [g.text for g in llm.chat_many(chats, params, cache=Cache(None))] == [g.text for g in first]
    assert llm.chat_many([], params, cache=Cache(None)) == []
    if name.startswith("openai"):  # the served text came back, in order
        assert [g.text for g in first] == ["WHERE WAS ARTEMISIA GENTILESCHI BORN?", "WHO WAS HER FATHER?", ""]


@pytest.mark.parametrize("name", _params(ENTAILMENT_CASES))
def test_entailment(name: str, env: Env):
    ent = get_entailment(ENTAILMENT_CASES[name](env))
    assert ent.spec.startswith(name)
    for judge in (ent.probs, ent.relevance):
        got = judge(PAIRS, cache=Cache(None))
        assert len(got) == len(PAIRS) and all(0.0 <= p <= 1.0 for p in got)
        assert got[0] == got[3] and judge(PAIRS, cache=Cache(None)) == got
        assert judge([], cache=Cache(None)) == []
    if ent.three_way:
        for p3 in ent.probs3(PAIRS, cache=Cache(None)):
            assert len(p3) == 3 and all(0.0 <= x <= 1.0 for x in p3) and math.isclose(sum(p3), 1.0, abs_tol=1e-4)


@pytest.mark.parametrize("name", _params(SCORER_CASES))
def test_lm_scorer(name: str, env: Env):
    sc = get_scorer(SCORER_CASES[name](env))
    assert sc.spec.startswith(name)
    spans = sc.token_spans(TEXTS, CONTEXTS, cache=Cache(None))
    assert len(spans) == len(TEXTS)
    for text, row in zip(TEXTS, spans):
        assert row, text
        assert all(lp <= 0.0 and math.isfinite(lp) for lp, _, _ in row)
        assert all(0 <= a < b <= len(text) for _, a, b in row) and [a for _, a, _ in row] == sorted(a for _, a, _ in row)
    assert sc.token_spans(TEXTS, CONTEXTS, cache=Cache(None)) == spans
    assert all(p >= 1.0 for p in sc.perplexity(TEXTS, CONTEXTS))
    assert math.isnan(sc.mean_logprob([""])[0])  # nothing to score is no score, not zero


@pytest.mark.parametrize("name", _params(MATCHER_CASES))
def test_text_scorer(name: str, env: Env):
    m = get_matcher(MATCHER_CASES[name](env))
    assert m.spec.startswith(name)
    pairs = [("Where was Artemisia born?", "She was born in Rome."), ("", "painter"), ("Who?", "")]
    got = m.scores(pairs)
    assert len(got) == 3 and all(0.0 <= s <= 1.0 for s in got)
    assert m.scores(pairs) == got and m.scores([]) == []
