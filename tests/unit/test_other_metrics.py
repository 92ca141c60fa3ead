"""CONNER, instruct-qa and ConSens: exact values on tiny inputs, sanity on the demo."""

from __future__ import annotations

import math

import pytest

from dataset_builder.demo import demo_entries
from evaluation.base import EvalItem, EvalOptions, get_metric, knowledge_prose, lm_context
from evaluation.conner import ConnerExtrinsic, ConnerIntrinsic
from evaluation.consens import ConSens, content_spans
from evaluation.instruct_qa import InstructQA
from kalma.kg import open_source
from kalma.schema import Answer, DatasetEntry, EntityGraph, KnowledgeGraph, Triple
from perf.random_models import build_causal


def _entry(reference: str = "", question: str = "where was she born ?") -> DatasetEntry:
    t = Triple(subject="Q1", subject_label="artemisia", relation="P19", relation_label="place of birth", value="Q220", value_label="rome")
    return DatasetEntry(
        id="e",
        general_question="",
        specific_question=question,
        reference=reference,
        knowledge_pool=KnowledgeGraph(entities=[EntityGraph(qid="Q1", label="artemisia", triples=[t])]),
        minimum_set=[t],
    )


def test_instruct_qa_exact():
    e = _entry(reference="She was born in Rome, Italy.")
    a = Answer(entry_id="e", text="The painter was born in Rome [Q1, place of birth: rome].", model="m")
    v = InstructQA(EvalOptions()).score([EvalItem.build(a, e)])[0].values
    # answer tokens (article removed, citation stripped): painter was born in rome -> 5
    # knowledge tokens: artemisia place of birth rome -> {artemisia, place, of, birth, rome}
    assert v["iqa_k_precision"] == pytest.approx(1 / 5)  # rome
    # question tokens {where, was, she, born}: remaining painter, in, rome -> 1/3
    assert v["iqa_k_precision_pp"] == pytest.approx(1 / 3)
    assert v["iqa_k_recall"] == pytest.approx(1 / 5)  # rome of 5 knowledge tokens
    # reference tokens: she was born in rome italy -> was, born, in, rome found: 4/6
    assert v["iqa_recall"] == pytest.approx(4 / 6)
    assert v["iqa_recall_strict"] == 0.0 and v["iqa_em"] == 0.0
    p, r = 4 / 5, 4 / 6
    assert v["iqa_f1"] == pytest.approx(2 * p * r / (p + r))


def test_consens_exact_with_a_tiny_lm(tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = str(build_causal(tmp_path / "lm"))
    e = _entry()
    answer = "she was born in rome ."
    assert [answer[a:b] for a, b in content_spans(answer, e.specific_question)] == ["rome"]
    item = EvalItem.build(Answer(entry_id="e", text=answer, model="m"), e)
    got = ConSens(EvalOptions(lm=f"hf:{path}@fp32")).score([item])[0].values["consens"]

    tok, model = AutoTokenizer.from_pretrained(path), AutoModelForCausalLM.from_pretrained(path).eval()

    def logprob_of_rome(context: str) -> float:
        ids = [tok.bos_token_id] + tok(context, add_special_tokens=False)["input_ids"] + tok(" " + answer, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), -1)
        pos = len(ids) - 2  # "rome" is the second-to-last token, before "."
        assert tok.convert_ids_to_tokens(ids[pos]) == "rome"
        return float(logp[pos - 1, ids[pos]])

    lp_c = logprob_of_rome(lm_context(e.specific_question, knowledge_prose(e.knowledge_pool)))
    lp_e = logprob_of_rome(lm_context(e.specific_question, ""))
    r = math.log(math.exp(-lp_e) / math.exp(-lp_c))
    assert got == pytest.approx(2 / (1 + math.exp(-r)) - 1, abs=1e-6)


def test_metrics_without_an_lm_say_so(tmp_path):
    from evaluation.runner import evaluate

    s = evaluate([_entry()], [Answer(entry_id="e", text="x", model="m")], tmp_path / "o", metrics=["consens", "conner", "conner-extrinsic"], progress=False)
    assert {"consens unavailable: it needs --lm", "conner unavailable: it needs --lm", "conner-extrinsic unavailable: it needs --lm"} <= set(s.notes)
    assert s.value("consens.consens_mean") is None and s.value("conner.conner_relevance") is None


def test_conner_extrinsic_needs_a_reference():
    m = ConnerExtrinsic(EvalOptions(lm="smollm2"))
    m.prepare([_entry()])
    s = m.score([EvalItem.build(Answer(entry_id="e", text="x", model="m"), _entry())])[0]
    assert s.values["conner_helpfulness"] is None and "no reference" in s.notes["conner-extrinsic"]


@pytest.mark.slow
def test_sanity_on_the_demo_with_smollm2():
    import tempfile
    from pathlib import Path

    from baselines.pipeline import BaselineConfig, answer_dataset
    from kalma.jsonl import read_jsonl

    entries = demo_entries(open_source("demo"))
    out = Path(tempfile.mkdtemp()) / "a.jsonl"
    answer_dataset(entries, out, BaselineConfig(llm="template"), progress=False)
    answers = list(read_jsonl(out, Answer))
    by_id = {e.id: e for e in entries}
    opts = EvalOptions(lm="smollm2")

    # ConSens: the template answer with its own KG vs the same answer with another entry's KG
    own = [EvalItem.build(a, by_id[a.entry_id]) for a in answers]
    swapped = [EvalItem.build(a.model_copy(update={"kg": entries[(i + 1) % len(entries)].knowledge_pool}), by_id[a.entry_id]) for i, a in enumerate(answers)]
    # one call for both: an entry's knowledge opens its own item's contexts and the swapped item's before
    # it, and the shared-prefix runner runs each such prefix once
    both = [s.values["consens"] for s in ConSens(opts).score(own + swapped)]
    c_own, c_swap = both[: len(own)], both[len(own) :]
    print("ConSens own KG", [round(x, 3) for x in c_own], "other entry's KG", [round(x, 3) for x in c_swap])
    assert sum(a > b for a, b in zip(c_own, c_swap)) >= 5

    # helpfulness: the right KG lowers the reference's loss below random KGs on most entries
    ext = ConnerExtrinsic(opts)
    ext.prepare(entries)
    helps = [s.values["conner_helpfulness"] for s in ext.score(own)]
    print("helpfulness", [round(x, 3) for x in helps])
    assert sum(h > 0 for h in helps) >= 4

    # K-Precision: template answers copy the KG; hand-written free text does not
    free = [
        "She was a famous artist whose dramatic pictures were admired across Europe for centuries.",
        "The brothers shaped modern embryology through careful experiments and influential textbooks.",
        "Father and son both loved the game and played it with passion in many countries.",
        "His short life produced vivid stories about war, poverty and faith.",
        "He enjoyed sports at college, especially games played in spring.",
        "An Italian artist of the early seventeenth century with a notable daughter.",
    ]
    kp = InstructQA(opts)
    k_t = [s.values["iqa_k_precision"] for s in kp.score(own)]
    k_f = [s.values["iqa_k_precision"] for s in kp.score([EvalItem.build(a.model_copy(update={"text": f}), by_id[a.entry_id]) for a, f in zip(answers, free)])]
    print("K-Precision template", [round(x, 2) for x in k_t], "free text", [round(x, 2) for x in k_f])
    assert min(k_t) > max(k_f) and sum(k_t) / len(k_t) > 0.6


def test_conner_paragraph_coherence_from_a_configured_classifier(tmp_path):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from perf.random_models import build_bert_nli

    path = build_bert_nli(tmp_path / "cls")
    model = AutoModelForSequenceClassification.from_pretrained(path)
    model.config.id2label, model.config.label2id = {0: "incoherent", 1: "coherent", 2: "other"}, {"incoherent": 0, "coherent": 1, "other": 2}
    model.save_pretrained(path)
    lm = "hf:" + str(build_causal(tmp_path / "lm")) + "@fp32"
    answer = "she was born in rome ."
    metric = get_metric(f"conner:matcher=minilm,coherence_model=hf-cls:{path}", EvalOptions(lm=lm))  # typed options from the spec
    assert isinstance(metric, ConnerIntrinsic) and metric.coherence_model == f"hf-cls:{path}"
    v = metric.score([EvalItem.build(Answer(entry_id="e", text=answer, model="m"), _entry())])[0].values
    tok = AutoTokenizer.from_pretrained(path)
    with torch.no_grad():
        expected = torch.softmax(model.eval()(**tok([answer], return_tensors="pt")).logits, -1)[0, 1].item()
    assert v["conner_coherence_para"] == pytest.approx(expected, abs=1e-5)  # "coherent" is index 1, found by name
    assert f"paragraph: hf-cls:{path}" in metric.models()["conner_coherence"]


def test_lexical_aliases_change_the_cache_key():
    from kalma.cache import Cache
    from kalma.models.lexical import LexicalEntailment

    plain, aliased = LexicalEntailment(), LexicalEntailment({"Oscar Hertwig": ["Oskar Hertwig"]})
    pair = [("His teacher was Oskar Hertwig.", "doctoral advisor: Oscar Hertwig")]
    assert plain.probs(pair, cache=Cache(None)) == [0.0]
    assert aliased.probs(pair, cache=Cache(None)) == [1.0] and aliased.spec != plain.spec


def _geval_items(index: int):
    """The template's answer to the demo's entry `index`, as an item to judge."""
    import tempfile
    from pathlib import Path

    from baselines.pipeline import BaselineConfig, answer_dataset
    from kalma.jsonl import read_jsonl

    entry = demo_entries(open_source("demo"))[index]
    out = Path(tempfile.mkdtemp()) / "a.jsonl"
    answer_dataset([entry], out, BaselineConfig(llm="template"), progress=False)
    return [EvalItem.build(a, entry) for a in read_jsonl(out, Answer)]


@pytest.mark.slow
def test_geval_with_shared_prefixes_equals_transformers_generate_with_smollm2():
    """The judge's greedy replies from the shared-prefix runner (four criteria of an answer share
    its prompt) equal transformers' generate(), one batch of fixed size at a time."""
    from evaluation.text_quality import TOP, TextQuality, judge_chats
    from kalma.models import GenParams, get_llm
    from kalma.models.smollm2 import converted_dir
    from kalma.seeds import derive_seed

    # one answer under its four criteria (what the runner shares): the demo's shortest prompts, Stephen
    # Crane's (a third less CPU than the first entry's, most of it in generate()'s unshared prompts)
    items = _geval_items(3)
    specs = ("smollm2", f"hf:{converted_dir()},batching=items")
    fast, slow = (TextQuality(EvalOptions(judge=spec)).score(items) for spec in specs)
    # The replies themselves, not only their scores (SmolLM2's are unreadable here, so the scores
    # are None on both sides): asked again with the metric's own parameters, from the call cache.
    params = GenParams(temperature=0.0, max_tokens=5, seed=derive_seed(EvalOptions().seed, "geval", 0), logprobs=TOP)
    fast_replies, slow_replies = ([g.text for g in get_llm(spec).chat_many(judge_chats(items, "en"), params)] for spec in specs)
    assert len(fast_replies) == 4 and fast_replies == slow_replies
    assert get_llm(specs[0]).model()[1] is get_llm(specs[1]).model()[1]  # one set of weights, loaded once whatever names it
    for f, s in zip(fast, slow):
        for aspect in ("coherence", "consistency", "fluency", "relevance"):
            assert f.values[aspect] == s.values[aspect] and f.counts[f"{aspect}_invalid"] == s.counts[f"{aspect}_invalid"], aspect
            if s.values[f"{aspect}_weighted"] is not None:
                assert f.values[f"{aspect}_weighted"] == pytest.approx(s.values[f"{aspect}_weighted"], abs=1e-4)


def test_conner_gives_its_judge_the_evidence_in_the_datasets_language(tmp_path):
    """A French answer is checked against French evidence: the table holds only that pair, so
    evidence verbalised in English would be a pair it lacks (an error), not a judgement."""
    import json

    from kalma.verbalize import verbalize

    fact = Triple(subject="Q1", subject_label="Artemisia", relation="P19", relation_label="lieu de naissance", value="Q2", value_label="Rome")
    kg = KnowledgeGraph(entities=[EntityGraph(qid="Q1", label="Artemisia", triples=[fact])])
    entry = DatasetEntry(id="e", general_question="Qui était Artemisia ?", specific_question="Où est née Artemisia ?", knowledge_pool=kg)
    answer = Answer(entry_id="e", text="Artemisia est née à Rome [Q1, lieu de naissance: Rome].", model="m")
    table = tmp_path / "judged.jsonl"
    table.write_text(json.dumps({"premise": verbalize(fact, "Artemisia", "fr"), "hypothesis": "Artemisia est née à Rome.", "label": "entailment"}) + "\n")
    opts = EvalOptions(nli=f"table:{table}", lm="hf:" + str(build_causal(tmp_path / "lm")), language="fr")
    scored = ConnerIntrinsic(opts).score([EvalItem.build(answer, entry, language="fr")])
    assert scored[0].values["conner_fact_consistent"] == 1.0
