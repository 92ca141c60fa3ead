"""Random-weight transformers models built from a config and saved to a folder, so the real
loading, batching and label-mapping code runs without any download: tiny ones for the tests,
and any shape for the benchmarks (random weights give honest speed and memory, not quality)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

WORDS = (
    "the a of in was born is painter rome naples her his father she he 1 0 yes no premise hypothesis "
    "place birth death artemisia orazio gentileschi occupation question answer user assistant system : . ,"
).split()


TEXT_WORDS = WORDS + [f"w{i}" for i in range(1900)]


def random_text(rng: random.Random, n: int) -> str:
    """`n` words, the tokenizers' own and made-up ones: text of a known length in tokens for the
    memory and batching tests."""
    return " ".join(rng.choice(TEXT_WORDS) for _ in range(n))


def _tokenizer(special: dict[str, str], vocab_size: int | None = None):
    """A word-level tokenizer over WORDS, padded with made-up words up to `vocab_size`."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = list(dict.fromkeys(special.values())) + WORDS
    words += [f"w{i}" for i in range(max(0, (vocab_size or 0) - len(words)))]
    vocab = {tok: i for i, tok in enumerate(words)}
    tk = Tokenizer(models.WordLevel(vocab, unk_token=special["unk_token"]))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tk, **special)


@contextmanager
def building() -> Iterator[None]:
    """Build on the GPU in bf16 when there is one: a T5-11B shape then takes 40 s with its save,
    where fp32 on the CPU needs more memory and disk than the machine has (docs/gpu.md)."""
    import torch

    from kalma.models.runtime import device

    if device().torch_device() != "cuda":
        yield
        return
    dtype = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    torch.set_default_device("cuda")
    try:
        yield
    finally:
        torch.set_default_device(None)
        torch.set_default_dtype(dtype)


def _common(**kwargs: Any) -> dict[str, Any]:
    """Settings every transformers config takes through PretrainedConfig's **kwargs (which the
    per-model signatures do not list)."""
    return kwargs


def build_causal(folder: Path, arch: str = "gpt2", positions: int = 128) -> Path:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, PretrainedConfig, PreTrainedModel

    torch.manual_seed(0)
    tok = _tokenizer({"pad_token": "<pad>", "eos_token": "</s>", "bos_token": "<s>", "unk_token": "<unk>"})
    tok.chat_template = "{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} {% endfor %}assistant :"
    n = len(tok)
    cfg: PretrainedConfig
    model: PreTrainedModel
    if arch == "gpt2":
        cfg = GPT2Config(
            vocab_size=n,
            n_positions=positions,
            n_embd=32,
            n_layer=2,
            n_head=2,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
        )
        model = GPT2LMHeadModel(cfg)
    else:
        cfg = LlamaConfig(
            vocab_size=n,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=2,
            max_position_embeddings=positions,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
        )
        model = LlamaForCausalLM(cfg)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def build_t5(folder: Path) -> Path:
    return build_t5_shape(folder, d_model=32, d_ff=64, d_kv=8, heads=2, layers=2)


# Entailment deliberately NOT at index 0.
NLI_LABELS = {0: "NEUTRAL", 1: "CONTRADICTION", 2: "ENTAILMENT"}


def build_bert_nli(folder: Path) -> Path:
    return build_bert_classifier(folder, NLI_LABELS)


def build_bert_classifier(folder: Path, labels: dict[int, str]) -> Path:
    """A random BERT sequence classifier with these labels (one label: a cross-encoder's score)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    tok = _tokenizer({"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]"})
    cfg = BertConfig(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        **_common(num_labels=len(labels)),
        id2label=labels,
        label2id={v: k for k, v in labels.items()},
    )
    BertForSequenceClassification(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def build_deberta_nli(folder: Path, *, hidden: int = 64, layers: int = 2, heads: int = 4, intermediate: int = 256) -> Path:
    """A random DeBERTa-v2 NLI classifier with DeBERTa-v3's attention (disentangled, relative
    positions in 256 log buckets, shared keys): the shape `hf-nli:` models usually have."""
    import torch
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

    torch.manual_seed(0)
    tok = _tokenizer({"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]"})
    cfg = DebertaV2Config(
        vocab_size=len(tok),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=intermediate,
        max_position_embeddings=512,
        relative_attention=True,
        pos_att_type=["p2c", "c2p"],
        type_vocab_size=0,
        **_common(num_labels=len(NLI_LABELS)),
        id2label=NLI_LABELS,
        label2id={v: k for k, v in NLI_LABELS.items()},
    )
    # DeBERTa-v3's attention, read by the model from its config (not in the config's signature)
    cfg.position_buckets, cfg.norm_rel_ebd, cfg.share_att_key = 256, "layer_norm", True
    DebertaV2ForSequenceClassification(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def build_llama(folder: Path, *, hidden: int, layers: int, heads: int, intermediate: int, vocab: int, positions: int = 4096) -> Path:
    """A random Llama of the given shape (a Llama-7B shape: hidden 4096, 32 layers, 32 heads,
    intermediate 11008, vocabulary 32000)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    tok = _tokenizer({"pad_token": "<pad>", "eos_token": "</s>", "bos_token": "<s>", "unk_token": "<unk>"}, vocab)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=positions,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    LlamaForCausalLM(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def build_t5_shape(folder: Path, *, d_model: int, d_ff: int, d_kv: int, heads: int, layers: int, vocab: int | None = None) -> Path:
    """A random T5 of the given shape (TRUE's T5-11B: d_model 1024, d_ff 65536, d_kv 128, 128
    heads, 24 layers, vocabulary 32128)."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    tok = _tokenizer({"pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>"}, vocab)
    cfg = T5Config(
        vocab_size=len(tok),
        d_model=d_model,
        d_kv=d_kv,
        d_ff=d_ff,
        num_layers=layers,
        num_heads=heads,
        **_common(decoder_start_token_id=tok.pad_token_id),
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
    )
    T5ForConditionalGeneration(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder
