"""The grounding checkers (`kalma.models.checkers`) on tiny random models of each architecture:
every format's exact string and token ids for a hand-made pair against the authors' published
format, written out here independently (their inference code: Liyan06/MiniCheck, derenlei/FactCG,
yuh-zha/AlignScore, Vectara's modeling_hhem_v2.py); each read-out against a plain transformers
computation as the authors run it; AlignScore's and HHEM's conversions against their published
architectures; chunking (the maximum over chunks, nothing cut in silence); the served judge
against a real local HTTP server."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from kalma.cache import Cache
from kalma.errors import BackendError
from kalma.models import get_entailment
from tests import checker_models as cm
from tests.servers import reply, scripted_server

PAIR = ("Artemisia Gentileschi died in Naples in 1656.", "place of death: Naples")
OTHER = ("She was a painter in Florence.", "occupation: painter")


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("checkers")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KALMA_MODEL_DIR", str(root / "converted"))
        yield cm.build_checkers(root)


def _probs(spec: str, pairs: list[tuple[str, str]]) -> list[float]:
    return get_entailment(spec).probs(pairs, cache=Cache(None))


def _torch():
    import torch

    return torch


# ---------------------------------------------------------------- formats and read-outs


def test_minicheck_flan_t5(models):
    """`predict: ` + document + `</s>` + claim as one string (T5 closes it with `</s>`), read at the
    first decoder step (input id 0) from the logits of ids 3 and 209."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    torch = _torch()
    ent = get_entailment(f"minicheck-t5:{models.t5}")
    (x,) = ent.inputs([PAIR])
    tok = AutoTokenizer.from_pretrained(models.t5)
    expected = "predict: Artemisia Gentileschi died in Naples in 1656.</s>place of death: Naples"
    assert x.text == expected and x.ids == tuple(tok(expected)["input_ids"])
    assert x.ids.count(tok.eos_token_id) == 2 and x.ids[-1] == tok.eos_token_id and tok.decode(x.ids[:1]) == "predict"
    model = AutoModelForSeq2SeqLM.from_pretrained(models.t5).eval()
    with torch.no_grad():
        ids = torch.tensor([x.ids])
        logits = model(input_ids=ids, decoder_input_ids=torch.zeros((1, 1), dtype=torch.long)).logits[:, 0, :]
        expected_p = torch.softmax(logits[:, [3, 209]], dim=-1)[0, 1].item()
    assert _probs(f"minicheck-t5:{models.t5}", [PAIR]) == pytest.approx([expected_p], abs=1e-5)


@pytest.mark.parametrize("arch,sep,limit", [("roberta", "</s>", 512), ("deberta", "[SEP]", 2048)])
def test_minicheck_roberta_and_deberta_read_one_string_not_a_text_pair(models, arch, sep, limit):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch = _torch()
    path = getattr(models, arch)
    ent = get_entailment(f"minicheck:{path}")
    (x,) = ent.inputs([PAIR])
    tok = AutoTokenizer.from_pretrained(path)
    expected = PAIR[0] + sep + PAIR[1]
    assert x.text == expected and x.ids == tuple(tok(expected)["input_ids"]) and ent.max_length == limit
    if arch == "roberta":  # a text pair would add its own separators (`</s></s>`); DeBERTa's are the same
        assert x.ids != tuple(tok(*PAIR)["input_ids"])
    model = AutoModelForSequenceClassification.from_pretrained(path).eval()
    with torch.no_grad():
        expected_p = torch.softmax(model(input_ids=torch.tensor([x.ids])).logits, dim=-1)[0, 1].item()
    assert _probs(f"minicheck:{path}", [PAIR]) == pytest.approx([expected_p], abs=1e-5)


def test_factcg_wraps_the_pair_in_its_question(models):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch = _torch()
    (x,) = get_entailment(f"factcg:{models.deberta}").inputs([PAIR])
    expected = (
        'Artemisia Gentileschi died in Naples in 1656.\n\nChoose your answer: based on the paragraph above can we conclude that "place of death: Naples"?'
        "\n\nOPTIONS:\n- Yes\n- No\nI think the answer is "
    )
    tok = AutoTokenizer.from_pretrained(models.deberta)
    assert x.text == expected and x.ids == tuple(tok(expected)["input_ids"])
    model = AutoModelForSequenceClassification.from_pretrained(models.deberta).eval()
    with torch.no_grad():
        expected_p = torch.softmax(model(input_ids=torch.tensor([x.ids])).logits, dim=-1)[0, 1].item()
    assert _probs(f"factcg:{models.deberta}", [PAIR]) == pytest.approx([expected_p], abs=1e-5)


def _alignscore_reference(models, pairs: list[tuple[str, str]]) -> list[float]:
    """AlignScore's `BERTAlignModel` as published: RoBERTa with its pooler, `tri_layer` on the
    pooled output, P(aligned) = softmax index 0, over a tokenizer text pair."""
    from transformers import AutoConfig, AutoTokenizer, RobertaModel

    torch = _torch()
    state = torch.load(models.ckpt, weights_only=True)["state_dict"]
    body = RobertaModel(AutoConfig.from_pretrained(models.base), add_pooling_layer=True).eval()
    body.load_state_dict({k.removeprefix("base_model."): v for k, v in state.items() if k.startswith("base_model.")})
    tri = torch.nn.Linear(body.config.hidden_size, 3)
    tri.load_state_dict({"weight": state["tri_layer.weight"], "bias": state["tri_layer.bias"]})
    tok = AutoTokenizer.from_pretrained(models.base)
    with torch.no_grad():
        enc = tok([p for p, _ in pairs], [h for _, h in pairs], padding=True, return_tensors="pt")
        return torch.softmax(tri(body(**enc).pooler_output), dim=-1)[:, 0].tolist()


def test_alignscore_converted_computes_what_its_published_architecture_does(models):
    from transformers import AutoTokenizer

    spec = f"alignscore:{models.ckpt},base={models.base}"
    (x,) = get_entailment(spec).inputs([PAIR])
    assert x.text == PAIR and x.ids == tuple(AutoTokenizer.from_pretrained(models.base)(*PAIR)["input_ids"])
    assert _probs(spec, [PAIR, OTHER]) == pytest.approx(_alignscore_reference(models, [PAIR, OTHER]), abs=1e-5)
    # a claim of two sentences: the mean of each sentence's score
    two = (PAIR[0], "She died in Naples. She was a painter.")
    each = _alignscore_reference(models, [(PAIR[0], "She died in Naples."), (PAIR[0], "She was a painter.")])
    assert _probs(spec, [two]) == pytest.approx([sum(each) / 2], abs=1e-5)


def test_hhem_converted_computes_what_its_published_class_does(models):
    """HHEMv2ForSequenceClassification: its `t5` (a T5ForTokenClassification of the foundation)
    reads the prompt, `<pad>` first; P(consistent) is the first position's class 1."""
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoTokenizer, T5ForTokenClassification

    torch = _torch()
    spec = f"hhem:{models.hhem}"
    (x,) = get_entailment(spec).inputs([PAIR])
    text = cm.HHEM_PROMPT.format(text1=PAIR[0], text2=PAIR[1])
    tok = AutoTokenizer.from_pretrained(models.foundation)
    assert x.text == text and x.ids == tuple(tok(text)["input_ids"]) and x.ids[0] == tok.pad_token_id
    published = torch.nn.Module()
    published.t5 = T5ForTokenClassification(AutoConfig.from_pretrained(models.foundation, num_labels=2))
    missing, unexpected = published.load_state_dict(load_file(str(Path(models.hhem) / "model.safetensors")), strict=False)
    assert missing == ["t5.transformer.encoder.embed_tokens.weight"] and not unexpected  # the shared embedding, saved once
    published.eval()
    with torch.no_grad():
        enc = tok([cm.HHEM_PROMPT.format(text1=p, text2=h) for p, h in (PAIR, OTHER)], padding=True, return_tensors="pt")
        expected = torch.softmax(published.t5(**enc).logits[:, 0, :], dim=-1)[:, 1].tolist()
    assert _probs(spec, [PAIR, OTHER]) == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("name", ["minicheck-t5", "minicheck", "factcg", "alignscore", "hhem"])
def test_batched_pairs_score_as_one_at_a_time_and_reports_name_the_format(models, name):
    from kalma.models import ENTAILMENT, describe

    spec = _spec(models, name)
    pairs = [PAIR, OTHER, ("He was born in Rome in 1593 and was a painter like his daughter.", "place of birth: Rome")]
    batched = _probs(spec, pairs)
    assert batched == pytest.approx([_probs(spec, [p])[0] for p in pairs], abs=1e-5)
    said = describe(spec, ENTAILMENT)
    assert "format:" in said and "supported above 0.5" in said and "the premise (sentence) is the document" in said


def _spec(models, name: str) -> str:
    return cm.specs(models)["minicheck-roberta" if name == "minicheck" else name]


def test_the_direction_is_the_papers_unless_the_spec_says(models):
    (x,) = get_entailment(f"minicheck-t5:{models.t5},document=hypothesis").inputs([PAIR])
    assert x.text == "predict: place of death: Naples</s>Artemisia Gentileschi died in Naples in 1656."
    swapped = get_entailment(f"minicheck-t5:{models.t5},document=hypothesis")
    assert swapped.spec.endswith(",document=hypothesis") and "the hypothesis (triple) is the document" in swapped.format_note()
    assert swapped.probs([PAIR], cache=Cache(None)) == pytest.approx(_probs(f"minicheck-t5:{models.t5}", [(PAIR[1], PAIR[0])]))
    from kalma.errors import ConfigError

    with pytest.raises(ConfigError, match="option 'document': Input should be 'premise' or 'hypothesis'"):
        get_entailment(f"minicheck-t5:{models.t5},document=sideways")


# ---------------------------------------------------------------- chunks


def test_chunks_as_the_authors_pack_them():
    from kalma.models.checkers import alignscore_chunks, factcg_chunks, minicheck_chunks

    words = lambda s: len(s.split())  # noqa: E731 - MiniCheck-Flan-T5's unit
    doc = "One two three. Four five six.\nSeven eight. Nine ten eleven twelve."
    # newline blocks are split apart, each newline an item; chunks keep the newline between blocks
    assert minicheck_chunks(doc, 6, words) == (["One two three. Four five six.", "Seven eight. Nine ten eleven twelve."], False)
    assert minicheck_chunks(doc, 100, words) == (["One two three. Four five six.\nSeven eight. Nine ten eleven twelve."], False)
    assert minicheck_chunks("", 10, words) == ([""], False)
    # a sentence over the limit is split at words, never left to the tokenizer to cut
    assert minicheck_chunks("a b c d e f g.", 3, words) == (["a b c", "d e f", "g."], True)
    # FactCG: NLTK word tokens (the full stop is one), sentences joined by newlines
    assert factcg_chunks("One two. Three four. Five.", 6) == (["One two.\nThree four.", "Five."], False)
    # AlignScore: one chunk per 350 words (plus one), in equal runs of sentences
    assert alignscore_chunks("Born in Rome. Died in Naples. Painted in Florence. Worked in London.", words=8) == [
        "Born in Rome. Died in Naples.",
        "Painted in Florence. Worked in London.",
    ]


def test_each_checker_chunks_and_cuts_at_its_authors_sizes(models):
    """A document of 420 whitespace words (462 NLTK tokens, more subword tokens) lies between the
    authors' chunk sizes: one chunk for MiniCheck-Flan-T5 (500 words) and FactCG (550 NLTK tokens),
    two for AlignScore (350 words) and MiniCheck-RoBERTa (400 tokens); and each maximum length is
    its authors' (no limit for HHEM)."""
    doc = " ".join(["She painted the old city near the river at dawn."] * 42)
    specs = cm.specs(models)
    found = {name: len(get_entailment(specs[name]).inputs([(doc, PAIR[1])])) for name in ("minicheck-t5", "factcg", "alignscore", "minicheck-roberta")}
    assert found == {"minicheck-t5": 1, "factcg": 1, "alignscore": 2, "minicheck-roberta": 2}
    limits = {name: get_entailment(spec).max_length for name, spec in specs.items()}
    assert limits == {"minicheck-t5": 2048, "minicheck-roberta": 512, "minicheck-deberta": 2048, "factcg": 2048, "alignscore": 512, "hhem": None}


@pytest.mark.parametrize("name", ["minicheck-t5", "minicheck", "factcg", "alignscore"])
def test_a_checker_splits_sentences_by_its_language(models, name):
    """`,language=fr`: the document's (and AlignScore's claim's) sentences split by French rules,
    where "env." ends no sentence; the splitter is named in the report and in the cache key, and
    `kalma evaluate` gives a checker the dataset's language (held as one judge across languages)."""
    from evaluation.base import EvalOptions
    from evaluation.runner import any_language, in_language
    from kalma.models.checkers import sentences

    doc = "Il est né en 1610 env. à Rome. Il fut peintre."
    assert len(sentences(doc, "en")) == 3 and len(sentences(doc, "fr")) == 2  # the rules differ on this document
    spec = _spec(models, name)
    en, fr = get_entailment(spec), get_entailment(f"{spec},language=fr")
    assert fr.spec == f"{en.spec},language=fr" and fr.cache_identity() != en.cache_identity() and "fr abbreviations" in fr.format_note()
    if name == "alignscore":  # equal runs of sentences, and the claim split into sentences
        assert [len(x.chunks(doc)[0]) for x in (en, fr)] == [1, 1] and [len(x.claims(doc)) for x in (en, fr)] == [3, 2]
    else:  # one chunk either way at the authors' sizes: a size below the first French sentence tells them apart
        small = {"minicheck-t5": "chunk_size=7", "minicheck": "chunk_size=8", "factcg": "chunk_size=10"}[name]
        cut = [get_entailment(f"{spec},{small}" + lang).chunks(doc) for lang in ("", ",language=fr")]
        assert cut[0] != cut[1], cut
    options = in_language(EvalOptions(nli=spec), "fr")
    assert options.nli == f"{spec},language=fr" and any_language(options.nli) == any_language(spec) == spec


def test_alignscore_keeps_a_document_under_350_words_in_one_chunk(models):
    """AlignScore's chunks are one per 350 words: a document of 320 words (between 300 and 350) is
    one chunk, one of 360 two."""
    sentence = "She painted the old city near the river at dawn."  # 10 words
    ent = get_entailment(cm.specs(models)["alignscore"])
    assert [len(ent.inputs([(" ".join([sentence] * k), PAIR[1])])) for k in (32, 36)] == [1, 2]


def test_a_claim_only_the_last_chunk_supports_is_found(models):
    """A long document is cut into chunks, each scored; the pair's score is their maximum, so the
    chunk that scores highest wins wherever it is: here the last."""
    spec = f"minicheck-t5:{models.t5},chunk_size=7"
    claim = PAIR[1]
    sentences = ["She was born in Rome in 1593.", "Her father was a painter.", "She died in Naples in 1656.", "She was a painter in Florence."]
    alone = dict(zip(sentences, _probs(spec, [(s, claim) for s in sentences])))
    best = max(sentences, key=alone.__getitem__)
    doc = " ".join([s for s in sentences if s != best] + [best])
    ent = get_entailment(spec)
    x = ent.inputs([(doc, claim)])
    assert len(x) == 4 and [i.text for i in x] == [f"predict: {s}</s>{claim}" for s in doc_sentences(doc)]
    assert not any(i.cut or i.split for i in x)
    first = " ".join([best] + [s for s in sentences if s != best])
    found = _probs(spec, [(doc, claim), (first, claim)])
    assert found == pytest.approx([alone[best]] * 2, abs=1e-6) and found[0] > max(v for s, v in alone.items() if s != best)


def doc_sentences(doc: str) -> list[str]:
    from kalma.models.checkers import sentences

    return sentences(doc)


def test_nothing_is_cut_in_silence(models, caplog):
    """An input over the maximum loses the end of its document, never the claim, and says so."""
    claim = "place of death: Naples"
    doc = " ".join(["She was a painter in Florence and Rome."] * 6)
    ent = get_entailment(f"minicheck-t5:{models.t5},max_length=24")
    (x,) = ent.inputs([(doc, claim)])
    assert x.cut and len(x.ids) <= 24 and isinstance(x.text, str) and x.text.endswith("</s>" + claim)
    kept = x.text.removeprefix("predict: ").removesuffix("</s>" + claim)
    assert kept and doc.startswith(kept) and len(kept) < len(doc)
    with caplog.at_level("WARNING"):
        ent.probs([(doc, claim)], cache=Cache(None))
    assert "lost the end of their document (the claim kept)" in caplog.text
    # a claim longer than the maximum by itself is cut too, and said
    (long_claim,) = ent.inputs([("She died.", " ".join(["painter"] * 40))])
    assert long_claim.cut and len(long_claim.ids) == 24


# ---------------------------------------------------------------- converted checkpoints, refused


def test_checkpoints_that_are_not_what_they_say_are_refused_in_one_line(models, tmp_path, monkeypatch):
    torch = _torch()
    monkeypatch.setenv("KALMA_MODEL_DIR", str(tmp_path / "converted"))
    state = torch.load(models.ckpt, weights_only=True)["state_dict"]
    del state["tri_layer.weight"]
    torch.save({"state_dict": state}, tmp_path / "no-head.ckpt")
    with pytest.raises(BackendError, match="has no out_proj.weight: not an AlignScore checkpoint"):
        get_entailment(f"alignscore:{tmp_path / 'no-head.ckpt'},base={models.base}")
    with pytest.raises(BackendError, match="no checkpoint file"):
        get_entailment(f"alignscore:{tmp_path / 'missing.ckpt'}")
    with pytest.raises(BackendError, match="is a t5; AlignScore's checkpoints are RoBERTa"):
        get_entailment(f"alignscore:{models.ckpt},base={models.foundation}")
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "config.json").write_text(json.dumps({"foundation": models.foundation}))
    with pytest.raises(BackendError, match="holds no t5.\\* weights"):
        get_entailment(f"hhem:{tmp_path / 'bare'}")
    assert not list((tmp_path / "converted").glob("*/config.json"))  # nothing half-converted is kept


# ---------------------------------------------------------------- the served judge


def _chat(top: list[tuple[str, float]]) -> bytes:
    content = [{"token": top[0][0], "logprob": top[0][1], "bytes": None, "top_logprobs": [{"token": t, "logprob": v, "bytes": None} for t, v in top]}]
    choice = {"index": 0, "message": {"role": "assistant", "content": top[0][0]}, "finish_reason": "length", "logprobs": {"content": content}}
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice], "usage": {"prompt_tokens": 9, "completion_tokens": 1}}
    return json.dumps(body).encode()


def test_the_served_judge_asks_as_bespoke_minicheck_and_reads_its_yes(tmp_path):
    script = [reply(200, _chat([("Yes", math.log(0.6)), ("No", math.log(0.3)), ("yes", math.log(0.05))]), {"Content-Type": "application/json"})]
    card = [{"id": "bespoke", "object": "model", "created": 0, "root": "/srv/bespoke"}]
    with scripted_server(script, models=card) as (url, log):
        ent = get_entailment(f"served-judge:{url}/v1:bespoke")
        assert ent.probs([PAIR], cache=Cache(None)) == pytest.approx([0.65])  # "yes" in any case, not renormalised against "no"
        body = json.loads(log[-1]["body"])
    system = (
        "Determine whether the provided claim is consistent with the corresponding document. Consistency in this context implies that all "
        "information presented in the claim is substantiated by the document. If not, it should be considered inconsistent. Please assess "
        'the claim\'s consistency with the document by responding with either "Yes" or "No".'
    )
    assert body["messages"] == [{"role": "system", "content": system}, {"role": "user", "content": f"Document: {PAIR[0]}\nClaim: {PAIR[1]}"}]
    assert body["max_tokens"] == 1 and body["temperature"] == 0 and body["logprobs"] is True and body["top_logprobs"] == 5
    assert ent.spec == f"served-judge:{url}/v1:bespoke" and "MiniCheck LLM format" in ent.runs_as()


def test_a_served_judge_without_alternatives_is_read_by_its_reply(tmp_path):
    """A server that answers `top_logprobs: []` (some llama.cpp and TGI builds) with the reply "Yes":
    P is the reply's word (1), not the sum over no alternatives (0), and the report says so."""
    from click.testing import CliRunner

    from kalma.cli import main

    body = json.loads(_chat([("Yes", math.log(0.9))]))
    body["choices"][0]["logprobs"]["content"][0]["top_logprobs"] = []
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"doc": PAIR[0], "claim": PAIR[1], "label": 1}) + "\n" + json.dumps({"doc": OTHER[0], "claim": OTHER[1], "label": 0}) + "\n")
    with scripted_server([reply(200, json.dumps(body).encode(), {"Content-Type": "application/json"})], models=[{"id": "bespoke"}]) as (url, _):
        res = CliRunner().invoke(
            main,
            [
                "judge",
                "evaluate",
                "--nli",
                f"served-judge:{url}/v1:bespoke",
                "--pairs",
                str(pairs),
                "--no-cache",
                "--resamples",
                "20",
                "-o",
                str(tmp_path / "o"),
            ],
        )
    assert res.exit_code == 0, res.output
    assert "- read by the reply's word: 2 replies came without log-probabilities (P is 1 for yes, 0 for no)" in res.output
    scores = [json.loads(line) for line in (tmp_path / "o" / "scores.jsonl").read_text().splitlines()]
    assert [s["probability"] for s in scores] == [1.0, 1.0] and [s["correct"] for s in scores] == [True, False]


def test_the_served_judge_sends_the_direction_its_spec_says_and_keys_its_cache_by_it(tmp_path):
    script = [reply(200, _chat([("Yes", math.log(0.6))]), {"Content-Type": "application/json"})]
    with scripted_server(script, models=[{"id": "bespoke", "object": "model", "created": 0, "root": "/srv/bespoke"}]) as (url, log):
        paper, swapped = (get_entailment(f"served-judge:{url}/v1:bespoke{o}") for o in ("", ",document=hypothesis"))
        swapped.probs([PAIR], cache=Cache(None))
        body = json.loads(log[-1]["body"])
        keys = (paper.cache_identity(), swapped.cache_identity())
    assert body["messages"][1]["content"] == f"Document: {PAIR[1]}\nClaim: {PAIR[0]}" and "the hypothesis is the document" in swapped.runs_as()
    assert None not in keys and keys[0] != keys[1]


def test_the_llm_judge_reads_yes_and_no_tokens_with_their_leading_space(tmp_path):
    """A chat template that puts no space before the reply gives " Yes" / " No" as first tokens."""
    script = [reply(200, _chat([(" Yes", math.log(0.6)), (" No", math.log(0.2)), ("Maybe", math.log(0.1))]), {"Content-Type": "application/json"})]
    with scripted_server(script, models=[{"id": "m", "object": "model", "created": 0, "root": "/srv/m"}]) as (url, _):
        assert get_entailment(f"llm:openai-compatible:{url}/v1:m").probs([PAIR], cache=Cache(None)) == pytest.approx([0.75])  # 0.6 / (0.6 + 0.2)


def test_a_conversion_with_a_weight_missing_is_refused(models, tmp_path):
    from safetensors.torch import load_file, save_file

    weights = load_file(str(Path(models.hhem) / "model.safetensors"))
    dropped = next(k for k in weights if "layer_norm" in k)
    (tmp_path / "short").mkdir()
    save_file({k: v for k, v in weights.items() if k != dropped}, str(tmp_path / "short" / "model.safetensors"))
    (tmp_path / "short" / "config.json").write_text((Path(models.hhem) / "config.json").read_text())
    with pytest.raises(BackendError, match=r"do not fit the published architecture \(missing \['"):
        get_entailment(f"hhem:{tmp_path / 'short'}")


def test_unknown_checker_names_are_said_with_the_nearest(models):
    from kalma.errors import ConfigError

    with pytest.raises(ConfigError, match="Did you mean 'minicheck'"):
        get_entailment(f"minichek:{models.roberta}")
