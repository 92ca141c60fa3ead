"""Tiny random models of each grounding checker's architecture, saved to a folder as their authors
publish them, so that the checkers' real loading, formats and read-outs run without a download:
Flan-T5 (MiniCheck-Flan-T5), RoBERTa and DeBERTa-v3 two-class classifiers (MiniCheck, FactCG),
AlignScore's Lightning checkpoint beside its RoBERTa base, and HHEM's `t5.`-prefixed weights beside
its Flan-T5 foundation. Their tokenizers add special tokens as the real ones do (T5: `… </s>`,
RoBERTa: `<s> … </s>`, DeBERTa: `[CLS] … [SEP]`) and know the formats' words."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from perf.random_models import WORDS

# the words of the checkers' own formats, so that a changed prefix or template changes the ids
FORMAT_WORDS = (
    "predict choose your answer based on paragraph above can we conclude that options yes no i think determine if hypothesis true given "
    'premise document claim " ? - consistent supported died naples painter florence rome 1593 1656 july'
).split()

T5_SPECIAL = {"pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>"}
ROBERTA_SPECIAL = {"bos_token": "<s>", "pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>", "cls_token": "<s>", "sep_token": "</s>"}
DEBERTA_SPECIAL = {"pad_token": "[PAD]", "cls_token": "[CLS]", "sep_token": "[SEP]", "unk_token": "[UNK]", "bos_token": "[CLS]", "eos_token": "[SEP]"}
HHEM_PROMPT = "<pad> Determine if the hypothesis is true given the premise?\n\nPremise: {text1}\n\nHypothesis: {text2}"


def tokenizer(special: dict[str, str], single: str, pair: str, vocab: int | None = None) -> Any:
    """A lower-casing word-level tokenizer over the project's and the formats' words (made-up ones
    up to `vocab`), adding its special tokens by the templates `single` and `pair`."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    words = list(dict.fromkeys([*special.values(), *WORDS, *FORMAT_WORDS]))
    words += [f"w{i}" for i in range(max(0, (vocab or 0) - len(words)))]
    ids = {w: i for i, w in enumerate(words)}
    tk = Tokenizer(models.WordLevel(ids, unk_token=special["unk_token"]))
    tk.normalizer = normalizers.Lowercase()
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    marks = sorted({t for t in (single + " " + pair).split() if not t.startswith("$")})
    tk.post_processor = processors.TemplateProcessing(single=single, pair=pair, special_tokens=[(t, ids[t]) for t in marks])
    return PreTrainedTokenizerFast(tokenizer_object=tk, **special)


def _t5_config(tok: Any, **extra: Any) -> Any:
    from transformers import T5Config

    return T5Config(
        vocab_size=len(tok),
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_heads=2,
        decoder_start_token_id=tok.pad_token_id,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        **extra,
    )


def t5_tokenizer() -> Any:
    # Flan-T5's vocabulary is 32,128 ids: MiniCheck reads ids 3 and 209, so this one reaches past them
    return tokenizer(T5_SPECIAL, "$A </s>", "$A </s> $B </s>", vocab=256)


def build_minicheck_t5(folder: Path) -> Path:
    import torch
    from transformers import T5ForConditionalGeneration

    torch.manual_seed(1)
    tok = t5_tokenizer()
    T5ForConditionalGeneration(_t5_config(tok)).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def roberta_tokenizer() -> Any:
    return tokenizer(ROBERTA_SPECIAL, "<s> $A </s>", "<s> $A </s> </s> $B </s>")


def _roberta_config(tok: Any, labels: int) -> Any:
    from transformers import RobertaConfig

    return RobertaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=514,  # RoBERTa's 512 positions after its padding offset
        type_vocab_size=1,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        num_labels=labels,
    )


def build_roberta_classifier(folder: Path, labels: int = 2) -> Path:
    import torch
    from transformers import RobertaForSequenceClassification

    torch.manual_seed(2)
    tok = roberta_tokenizer()
    RobertaForSequenceClassification(_roberta_config(tok, labels)).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def build_deberta_classifier(
    folder: Path, labels: int | dict[int, str] = 2, *, v1: bool = False, hidden: int = 32, heads: int = 2, intermediate: int = 64
) -> Path:
    """A DeBERTa classifier: DeBERTa-v2 with DeBERTa-v3's attention (relative positions only, in
    buckets), or with `v1` a DeBERTa (v1) as its configs come (`max_relative_positions: -1`)."""
    import torch
    from transformers import DebertaConfig, DebertaForSequenceClassification, DebertaV2Config, DebertaV2ForSequenceClassification

    torch.manual_seed(3)
    tok = tokenizer(DEBERTA_SPECIAL, "[CLS] $A [SEP]", "[CLS] $A [SEP] $B [SEP]")
    names = labels if isinstance(labels, dict) else {i: f"LABEL_{i}" for i in range(labels)}
    shape = dict(vocab_size=len(tok), hidden_size=hidden, num_hidden_layers=2, num_attention_heads=heads, intermediate_size=intermediate)
    common = dict(relative_attention=True, pos_att_type=["p2c", "c2p"], max_position_embeddings=512, type_vocab_size=0, pad_token_id=tok.pad_token_id)
    labelled = dict(id2label=names, label2id={v: k for k, v in names.items()})
    if v1:
        DebertaForSequenceClassification(DebertaConfig(**shape, **common, max_relative_positions=-1, **labelled)).save_pretrained(folder)
    else:
        cfg = DebertaV2Config(**shape, **common, position_biased_input=False, **labelled)
        cfg.position_buckets, cfg.norm_rel_ebd, cfg.share_att_key = 256, "layer_norm", True
        DebertaV2ForSequenceClassification(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def build_alignscore(folder: Path) -> tuple[Path, Path]:
    """(checkpoint, base): a Lightning checkpoint laid out as AlignScore's `BERTAlignModel` saves
    one (`base_model.` a RoBERTa with its pooler, `mlm_head.`, and the `bin_layer`, `tri_layer` and
    `reg_layer` heads on the pooled output), and the RoBERTa base it names (config, tokenizer)."""
    import torch
    from transformers import RobertaForMaskedLM, RobertaModel

    torch.manual_seed(4)
    tok = roberta_tokenizer()
    cfg = _roberta_config(tok, 2)
    base = folder / "roberta-base-like"
    cfg.save_pretrained(base)
    tok.save_pretrained(base)
    state = {f"base_model.{k}": v for k, v in RobertaModel(cfg, add_pooling_layer=True).state_dict().items()}
    state |= {f"mlm_head.{k}": v for k, v in RobertaForMaskedLM(cfg).lm_head.state_dict().items()}
    for name, n in (("bin_layer", 2), ("tri_layer", 3), ("reg_layer", 1)):
        layer = torch.nn.Linear(cfg.hidden_size, n)
        state |= {f"{name}.weight": layer.weight.detach().clone(), f"{name}.bias": layer.bias.detach().clone()}
    ckpt = folder / "AlignScore-tiny.ckpt"
    torch.save({"state_dict": state, "epoch": 0, "hyper_parameters": {"model": "roberta-base-like"}}, ckpt)
    return ckpt, base


def build_hhem(folder: Path) -> tuple[Path, Path]:
    """(published folder, foundation): HHEM-2.1-Open's layout (`HHEMv2ForSequenceClassification`,
    whose `t5` is a `T5ForTokenClassification` of its foundation with two labels: weights under
    `t5.`, the shared embedding saved once), and the Flan-T5 foundation its config names."""
    import json

    import torch
    from safetensors.torch import save_file
    from transformers import T5ForTokenClassification

    torch.manual_seed(5)
    tok = t5_tokenizer()
    foundation = folder / "flan-t5-like"
    _t5_config(tok).save_pretrained(foundation)
    tok.save_pretrained(foundation)
    model = T5ForTokenClassification(_t5_config(tok, num_labels=2))
    state = {f"t5.{k}": v.detach().clone().contiguous() for k, v in model.state_dict().items() if k != "transformer.encoder.embed_tokens.weight"}
    published = folder / "hhem"
    published.mkdir(parents=True)
    save_file(state, str(published / "model.safetensors"))
    config = {"architectures": ["HHEMv2ForSequenceClassification"], "model_type": "HHEMv2", "foundation": str(foundation), "prompt": HHEM_PROMPT}
    (published / "config.json").write_text(json.dumps(config))
    return published, foundation


def build_checkers(root: Path) -> SimpleNamespace:
    """One tiny model of every checker under `root`: the folders and files each spec names."""
    ckpt, base = build_alignscore(root / "alignscore")
    hhem, foundation = build_hhem(root / "hhem")
    return SimpleNamespace(
        t5=str(build_minicheck_t5(root / "t5")),
        roberta=str(build_roberta_classifier(root / "roberta")),
        deberta=str(build_deberta_classifier(root / "deberta")),
        ckpt=str(ckpt),
        base=str(base),
        hhem=str(hhem),
        foundation=str(foundation),
    )


def specs(built: SimpleNamespace) -> dict[str, str]:
    """The spec of each kind of checker on `built` (`build_checkers`)."""
    return {
        "minicheck-t5": f"minicheck-t5:{built.t5}",
        "minicheck-roberta": f"minicheck:{built.roberta}",
        "minicheck-deberta": f"minicheck:{built.deberta}",
        "factcg": f"factcg:{built.deberta}",
        "alignscore": f"alignscore:{built.ckpt},base={built.base}",
        "hhem": f"hhem:{built.hhem}",
    }
