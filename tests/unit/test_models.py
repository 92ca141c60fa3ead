"""Model layer: real transformers code paths on tiny random models, a real local
OpenAI-compatible HTTP server, SmolLM2 from its wheel, the registry and the cache."""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from kalma.cache import Cache, get_cache
from kalma.errors import BackendError
from kalma.models import GenParams, get_entailment, get_llm, get_scorer
from kalma.models.hf import HFCausalLM, HFCausalScorer, HFNLIEntailment, HFSeq2SeqEntailment
from perf.random_models import NLI_LABELS, build_bert_nli, build_causal, build_t5
from tests.servers import completion, reply, scripted_server

PAIRS = [
    ("artemisia was born in rome .", "place of birth : rome"),
    ("he was a painter", "occupation : painter"),
    ("she was born in naples", "place of birth : rome"),
    ("artemisia was born in rome .", "place of birth : rome"),
]


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def causal_dir(request, tmp_path_factory):
    return str(build_causal(tmp_path_factory.mktemp(request.param), request.param))


def test_hf_generation_batched_equals_single(causal_dir):
    llm = HFCausalLM(f"{causal_dir}@fp32", batch_size=4)
    chats = [[{"role": "user", "content": c}] for c in ["where was artemisia born", "who was her father", "the painter", "rome"]]
    params = GenParams(max_tokens=6, logprobs=3)
    batched = llm.chat_many(chats, params, cache=Cache(None))
    single = [llm.chat_many([c], params, cache=Cache(None))[0] for c in chats]
    assert [g.text for g in batched] == [g.text for g in single]
    for g in batched:
        assert len(g.logprobs) == g.completion_tokens <= 6 and all(len(t.top) == 3 for t in g.logprobs)
        assert all(t.logprob <= 0 for t in g.logprobs)


def test_hf_scorer_batched_equals_single(causal_dir):
    sc = HFCausalScorer(f"{causal_dir}@fp32", batch_size=8)
    texts = ["she was born in rome .", "painter", "the father of artemisia was orazio gentileschi"]
    ctxs = ["question : where", "", "artemisia"]
    batched = sc.token_logprobs(texts, ctxs, cache=Cache(None))
    single = [sc.token_logprobs([t], [c], cache=Cache(None))[0] for t, c in zip(texts, ctxs)]
    for b, s, t in zip(batched, single, texts):
        assert len(b) == len(t.split())
        assert b == pytest.approx(s, abs=1e-4)


def test_one_tokenizer_call_gives_what_a_call_per_text_gives(causal_dir):
    from kalma.models.hf import _tokenize

    tok, _ = HFCausalScorer(f"{causal_dir}@fp32").model()
    texts = ["she was born in rome .", "", " leading space", "ünïcode → 東京 naïve", "a\nb\tc", "painter " * 60]

    def one_by_one() -> list:
        found = [tok(t, add_special_tokens=False, return_offsets_mapping=True) for t in texts]
        return [(list(f["input_ids"]), [tuple(o) for o in f["offset_mapping"]]) for f in found]

    def batched() -> list:
        return [(list(ids), [tuple(o) for o in offsets]) for ids, offsets in _tokenize(tok, texts)]

    assert batched() == one_by_one()
    tok(["a b", "c"], padding=True, truncation=True, max_length=8)  # leaves its settings on the shared Rust tokenizer
    assert tok.backend_tokenizer.padding is not None
    assert batched() == one_by_one()


def test_seq2seq_entailment(tmp_path):
    ent = HFSeq2SeqEntailment(f"{build_t5(tmp_path)}@fp32", batch_size=3)
    probs = ent.probs(PAIRS, cache=Cache(None))
    assert len(probs) == 4 and all(0 < p < 1 for p in probs) and probs[0] == pytest.approx(probs[3])
    single = [ent.probs([p], cache=Cache(None))[0] for p in PAIRS]
    assert probs == pytest.approx(single, abs=1e-5)


def test_nli_label_mapping_by_name(tmp_path):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    path = str(build_bert_nli(tmp_path))
    ent = HFNLIEntailment(f"{path}@fp32", batch_size=2)
    probs = ent.probs(PAIRS, cache=Cache(None))
    device = ent.model()[1].device  # the reference runs where the backend does, in fp32 as well
    tok, model = AutoTokenizer.from_pretrained(path), AutoModelForSequenceClassification.from_pretrained(path).eval().to(device)
    with torch.no_grad():
        enc = tok([p for p, _ in PAIRS], [h for _, h in PAIRS], return_tensors="pt", padding=True).to(device)
        expected = torch.softmax(model(**enc).logits, -1)[:, 2].tolist()  # ENTAILMENT is index 2
    assert probs == pytest.approx(expected, abs=1e-5)
    three = ent.probs3(PAIRS, cache=Cache(None))
    assert [t[0] for t in three] == pytest.approx(expected, abs=1e-5)
    assert all(sum(t) == pytest.approx(1.0) for t in three) and ent.three_way
    assert NLI_LABELS[2] == "ENTAILMENT"


def test_registry_suggests_and_is_lazy():
    with pytest.raises(ValueError, match="Did you mean 'smollm2'"):
        get_llm("smollm")
    with pytest.raises(ValueError, match="Did you mean 'hf-nli'"):
        get_entailment("hf-nl:x")
    code = "import sys, kalma.models as m; m.get_llm('template'); m.get_entailment('lexical'); print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def test_lexical_entailment_rules():
    ent = get_entailment("lexical")
    assert ent.approximate
    got = ent.probs(
        [
            ("She was born on July 8, 1596, in Rome.", "date of birth: 1596-07-08"),
            ("She was born on 8 July 1596.", "date of birth: 1596-07-08"),
            ("He died in 1639.", "date of death: 1639-01-01"),
            ("He died in 1639.", "date of death: 1639-02-07"),
            ("It cost 1,000 florins.", "price: 1000"),
            ("She was born in Rome.", "Artemisia Gentileschi's place of birth is Rome."),
            ("Atletico Madrid signed him.", "member of sports team: Atlético Madrid"),
            ("She was born in Naples.", "place of birth: Rome"),
        ],
        cache=Cache(None),
    )
    assert got == [1, 1, 1, 0, 1, 1, 1, 0]


# ---------------------------------------------------------------- OpenAI-compatible server


def test_openai_compatible_against_local_server(monkeypatch, tmp_path):
    monkeypatch.setenv("KALMA_COMPAT_API_KEY", "sk-test-secret-123")
    monkeypatch.setenv("KALMA_PRICES", json.dumps({"tiny": [1.0, 2.0]}))
    script = [
        reply(429, b'{"error": "slow"}', {"Retry-After": "0", "Content-Type": "application/json"}),
        reply(500, b'{"error": "boom"}', {"Content-Type": "application/json"}),
        reply(200, completion("4", logprobs=True), {"Content-Type": "application/json"}),
    ]
    cache = Cache(tmp_path / "c.sqlite")
    with scripted_server(script, models=[{"id": "tiny", "object": "model", "created": 0, "root": "/srv/tiny"}]) as (url, log):
        from kalma.models.openai_backend import OpenAIChat

        llm = OpenAIChat("tiny", base_url=f"{url}/v1")
        assert llm.spec == f"openai-compatible:{url}/v1:tiny"
        gen = llm.chat_many([[{"role": "user", "content": "Rate it."}]], GenParams(seed=1, logprobs=2), cache=cache)[0]
        assert gen.text == "4" and len(log) == 3  # 429 and 500 were retried
        assert gen.logprobs[0].top == {"4": -0.2, "5": -1.8}
        assert gen.prompt_tokens == 11 and gen.cost_usd == pytest.approx((11 * 1 + 1 * 2) / 1e6)
        body = json.loads(log[-1]["body"])
        assert (
            body["seed"] == 1
            and body["top_logprobs"] == 2
            and {k.lower(): v for k, v in log[-1]["headers"].items()}["authorization"] == "Bearer sk-test-secret-123"
        )
        # an identical second run is answered from the cache: no request
        llm.chat_many([[{"role": "user", "content": "Rate it."}]], GenParams(seed=1, logprobs=2), cache=cache)
        assert len(log) == 3
    raw = (tmp_path / "c.sqlite").read_bytes()
    assert b"sk-test-secret-123" not in raw


def _echoed(tokens: list[str], offsets: list[int], values: list[float | None], generated: int) -> bytes:
    """A /completions body with the prompt echoed, as vLLM sends it (its v0.16 reply to `echo`
    with `logprobs`: the first prompt token null, the generated token last)."""
    top = [None if v is None else {t: v} for t, v in zip(tokens, values)]
    logprobs = {"text_offset": offsets, "token_logprobs": values, "tokens": tokens, "top_logprobs": top}
    choice = {"index": 0, "text": "".join(tokens), "logprobs": logprobs, "finish_reason": "length"}
    usage = {"prompt_tokens": len(tokens) - generated, "completion_tokens": generated, "total_tokens": len(tokens)}
    return json.dumps({"id": "c", "object": "text_completion", "created": 0, "model": "m", "choices": [choice], "usage": usage}).encode()


BYTE_BPE = ["Rome", " is", " old", ".", " Paris", " is", " big", "."]  # the context's tokens, then the text's
LOGPROBS = [-1.0, -2.0, -3.0, -4.0, -5.0, -6.0, -7.0, -8.0]
SCORED = [(-5.0, 0, 5), (-6.0, 5, 8), (-7.0, 8, 12), (-8.0, 12, 13)]  # spans as the local scorer gives them


@pytest.mark.parametrize(
    "tokens,offsets,values,generated",
    [
        # no start token (Qwen, SmolLM2), one generated token after the prompt
        (BYTE_BPE + [" It"], [0, 4, 7, 11, 12, 18, 21, 25, 26], [None, *LOGPROBS[1:], -0.5], 1),
        # a start token listed first, its characters counted in the offsets (vLLM with Llama 3)
        (["<|begin_of_text|>", *BYTE_BPE, " It"], [0, 17, 21, 24, 28, 29, 35, 38, 42, 43], [None, *LOGPROBS, -0.5], 1),
        # the model stopped at once: nothing generated to cut off
        (BYTE_BPE, [0, 4, 7, 11, 12, 18, 21, 25], [None, *LOGPROBS[1:]], 0),
        # token strings that do not join to the prompt (SentencePiece pieces): the offsets as OpenAI defines them
        (["▁Rome", "▁is", "▁old", ".", "▁Paris", "▁is", "▁big", ".", "▁It"], [0, 4, 7, 11, 12, 18, 21, 25, 26], [None, *LOGPROBS[1:], -0.5], 1),
    ],
)
def test_a_served_scorer_reads_the_text_tokens_of_an_echoed_prompt(tokens, offsets, values, generated):
    with scripted_server([reply(200, _echoed(tokens, offsets, values, generated), {"Content-Type": "application/json"})]) as (url, log):
        scorer = get_scorer(f"openai-compatible:{url}/v1:m")
        spans = scorer.token_spans(["Paris is big."], ["Rome is old."], cache=Cache(None))
        body = json.loads(log[0]["body"])
    assert body["prompt"] == "Rome is old. Paris is big." and body["echo"] is True and body["logprobs"] >= 0
    assert spans == [SCORED]
    assert ["Paris is big."[a:b] for _, a, b in spans[0]] == ["Paris", " is", " big", "."]


@pytest.mark.parametrize(
    "body,said",
    [
        (
            json.dumps({"id": "c", "object": "text_completion", "created": 0, "model": "m", "choices": [{"index": 0, "text": "x", "logprobs": None}]}).encode(),
            "no prompt",
        ),
        (_echoed([" It"], [26], [-0.5], 1), "the generated tokens only"),  # `echo` ignored
    ],
)
def test_a_server_that_does_not_echo_log_probabilities_is_said_in_one_line(body, said):
    with scripted_server([reply(200, body, {"Content-Type": "application/json"})]) as (url, _):
        with pytest.raises(BackendError, match=said) as err:
            get_scorer(f"openai-compatible:{url}/v1:m").perplexity(["Paris is big."], ["Rome is old."])
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "text,answer,thoughts",
    [
        ("<think>Rome? [Q1, x: y]</think>\n\nBorn in Rome [NA].", "Born in Rome [NA].", "Rome? [Q1, x: y]"),
        ("  <Thinking>a</thinking>b", "b", "a"),
        ("<think>ran out of tokens", "", "ran out of tokens"),
        ("the template opened the tag\n</think>\nAnswer.", "Answer.", "the template opened the tag"),
        ("Plain answer.", "Plain answer.", None),
        ("An answer that mentions <think>x</think> in passing.", "An answer that mentions <think>x</think> in passing.", None),
    ],
)
def test_a_reasoning_block_is_not_the_answer(text, answer, thoughts):
    from kalma.models.base import Generation, split_reasoning

    g = split_reasoning(Generation(text=text, model="m"))
    assert (g.text, g.reasoning) == (answer, thoughts)


def test_reasoning_models_behind_an_openai_compatible_server(tmp_path):
    """Thoughts come inline (`<think>`) or parsed out (`reasoning_content`); either way the answer
    file holds the answer as `text` and the thoughts, and a cut-short answer, in `meta`."""
    from click.testing import CliRunner

    from dataset_builder.demo import demo_entries
    from kalma.cli import main
    from kalma.jsonl import read_jsonl, write_jsonl
    from kalma.kg import open_source
    from kalma.schema import Answer

    entries = demo_entries(open_source("demo"))[:2]
    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    ok = {"Content-Type": "application/json"}
    script = [
        reply(200, completion("<think>Which fact? [Q1, x: y]</think>She was born in Rome [NA].", finish_reason="stop"), ok),
        reply(200, completion("He painted [NA].", reasoning_content="Check the list first.", finish_reason="length"), ok),
    ]
    with scripted_server(script) as (url, log):
        args = ["answer", "--dataset", str(tmp_path / "d.jsonl"), "--retrieval", "gold", "--llm", f"openai-compatible:{url}/v1:r1,concurrency=1"]
        res = CliRunner().invoke(main, [*args, "-o", str(tmp_path / "a.jsonl")])
        assert res.exit_code == 0, res.output
        assert '"cut_at_max_tokens": 1' in res.output  # the report says one answer ran into the limit
    rows = {a.entry_id: a for a in read_jsonl(tmp_path / "a.jsonl", Answer).records}
    first, second = rows[entries[0].id], rows[entries[1].id]
    assert first.text == "She was born in Rome [NA]." and first.meta["reasoning"] == "Which fact? [Q1, x: y]" and first.meta["finish_reason"] == "stop"
    assert second.text == "He painted [NA]." and second.meta["reasoning"] == "Check the list first." and second.meta["finish_reason"] == "length"


def test_sampling_without_seed_is_not_cached(causal_dir):
    llm = HFCausalLM(f"{causal_dir}@fp32")
    cache = get_cache()
    llm.chat_many([[{"role": "user", "content": "Question: x"}]], GenParams(temperature=0.7, max_tokens=4))
    assert cache.stats()["entries"].get("llm", 0) == 0
    llm.chat_many([[{"role": "user", "content": "Question: x"}]], GenParams(temperature=0.7, max_tokens=4, seed=3))
    assert cache.stats()["entries"]["llm"] == 1


# ---------------------------------------------------------------- cache robustness

WRITER = """
import sys
from kalma.cache import Cache
c = Cache(sys.argv[1])
for i in range(int(sys.argv[3])):
    c.put(f"{sys.argv[2]}-{i}", "test", {"i": i, "pad": "x" * 500})
print("done")
"""


def test_cache_two_writers_and_a_kill(tmp_path):
    path = str(tmp_path / "c.sqlite")
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, path, name, "300"]) for name in ("a", "b")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    assert Cache(path).stats()["entries"]["test"] == 600
    killed = subprocess.Popen([sys.executable, "-c", WRITER, path, "k", "1000000"])
    deadline = time.monotonic() + 60
    while Cache(path).get("k-0") is None and time.monotonic() < deadline:  # killed as soon as it writes, not after a fixed wait
        time.sleep(0.05)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    with sqlite3.connect(path) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    n = Cache(path).stats()["entries"]["test"]
    assert n > 600 and Cache(path).get("k-0") == {"i": 0, "pad": "x" * 500}


def test_credentials_are_refused_as_cache_keys():
    from kalma.cache import make_key

    with pytest.raises(ValueError, match="credential"):
        make_key("llm", "x", "m", {"api_key": "sk-1"}, "hi")
    make_key("llm", "x", "m", {"max_tokens": 5}, "hi")


# ---------------------------------------------------------------- SmolLM2


@pytest.mark.slow
def test_smollm2_chats_and_scores():
    llm = get_llm("smollm2")
    gen = llm.chat([{"role": "user", "content": "What is the capital of France? Answer in one word."}], GenParams(max_tokens=12))
    assert gen.text.strip() and gen.model == "smollm2"
    sc = get_scorer("smollm2")
    fluent = "The painter was born in Rome and later moved to Naples with her family."
    words = fluent.split()
    shuffled = " ".join(random.Random(0).sample(words, len(words)))
    ppl_fluent, ppl_shuffled = sc.perplexity([fluent, shuffled])
    assert ppl_fluent < ppl_shuffled / 5


def test_hf_inputs_longer_than_the_window(tmp_path):
    """A 128-position model: the scorer cuts a long context from the left and scores the text
    whole (as a sliding window would); a prompt that cannot fit is an error naming the sizes,
    not torch's IndexError."""
    from kalma.errors import BackendError

    path = str(build_causal(tmp_path / "short"))  # 128 positions, one token per word
    sc = HFCausalScorer(f"{path}@fp32")
    text = "she was born in rome ."
    long_ctx = " ".join(["painter"] * 300)
    got = sc.token_logprobs([text], [long_ctx], cache=Cache(None))[0]
    fitted = sc.token_logprobs([text], [" ".join(["painter"] * (128 - 1 - 6))], cache=Cache(None))[0]
    assert got == pytest.approx(fitted, abs=1e-5) and len(got) == 6
    with pytest.raises(BackendError, match=r"a text of 200 tokens does not fit the model's 128 positions"):
        sc.token_logprobs([" ".join(["rome"] * 200)], cache=Cache(None))
    llm = HFCausalLM(f"{path}@fp32")
    with pytest.raises(BackendError, match=r"a prompt of \d+ tokens plus 8 to generate exceeds the model's 128 positions"):
        llm.chat_many([[{"role": "user", "content": long_ctx}]], GenParams(max_tokens=8), cache=Cache(None))


def test_a_checkpoint_written_over_its_folder_is_never_answered_from_the_cache(tmp_path):
    """Fine-tuning into the same folder makes another model: its scores are computed, not the
    old checkpoint's read back from the call cache or from the process's loaded models."""
    import torch
    from transformers import AutoModelForCausalLM

    from kalma.models.hf import HFCausalScorer
    from perf.random_models import build_causal

    folder = build_causal(tmp_path / "ckpt")
    cache = Cache(tmp_path / "c.sqlite")
    first = HFCausalScorer(f"{folder}@fp32").token_logprobs(["she was born in rome"], cache=cache)
    again = HFCausalScorer(f"{folder}@fp32").token_logprobs(["she was born in rome"], cache=cache)
    assert again == first and cache.stats()["entries"]["lm"] == 1  # the same weights: from the cache
    model = AutoModelForCausalLM.from_pretrained(folder)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.5 * torch.randn_like(p))
    model.save_pretrained(folder)
    second = HFCausalScorer(f"{folder}@fp32").token_logprobs(["she was born in rome"], cache=cache)
    assert second != first and cache.stats()["entries"]["lm"] == 2


def test_the_matchers_give_sentence_transformers_numbers_on_the_runtime(tmp_path):
    """`cross-encoder:` and `minilm` are transformers backends now (dtype, budget, pass width, out
    of memory, runs_as), and give the numbers sentence-transformers gives: a cross-encoder's
    probability once (`CrossEncoder.predict` is already a sigmoid: the old matcher took a second
    one), MiniLM's normalised mean-pooled embeddings."""
    from sentence_transformers import CrossEncoder, SentenceTransformer

    from kalma.models.hf import HFCrossEncoder
    from kalma.models.matcher import minilm
    from perf.random_models import build_bert_classifier

    pairs = [("who painted judith", "Artemisia Gentileschi painted Judith Slaying Holofernes."), ("where was she born", "Rome"), ("", "a text alone")]
    ranker = str(build_bert_classifier(tmp_path / "ce", {0: "score"}))
    ours = HFCrossEncoder(ranker).scores(pairs)
    assert ours == pytest.approx(list(CrossEncoder(ranker, device="cpu").predict(pairs)), abs=1e-5)
    m = minilm()
    st = SentenceTransformer(m.path, device="cpu")
    q, t = st.encode([a for a, _ in pairs], normalize_embeddings=True), st.encode([b for _, b in pairs], normalize_embeddings=True)
    assert m.scores(pairs) == pytest.approx([max(0.0, float((x * y).sum())) for x, y in zip(q, t)], abs=1e-5)
    assert m.runs_as() == "@fp32 on CPU" and m.rt.pass_tokens is not None and HFCrossEncoder(ranker).spec == f"cross-encoder:{ranker}"
