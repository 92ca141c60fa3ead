"""What a batch holds in memory, predicted before it runs, and counted after on the CPU.

Every batch a transformers backend runs is planned against one budget in bytes (`runtime`): the
prediction covers everything alive at the batch's peak beyond the weights, for each path:

- **a forward pass** (`forward`): in no-grad inference one layer's tensors are alive at a time,
  beside the residual stream. The peak is the largest of three phases: the feed-forward (its
  activations: 3 x the feed-forward width for a gated MLP, 2 otherwise), attention (queries,
  keys, values and their rotated copies; with eager attention the scores and their softmax, in
  fp32, over every position attended), and the logits of the positions scored, with their fp32
  copy and log-softmax. Masks, rotary tables and the key/value cache are added to every phase.
- **the key/value cache** (`kv`): 2 x layers x key/value heads x head width a token.
- **the shared-prefix runner** (`leaves`): each row's copy of its prefix's cache, and the pass
  over its own tokens on top of it.
- **seq2seq entailment** (`seq2seq`): the encoder pass, then one decoder step with its logits.
- **DeBERTa** (`hf-nli:`'s usual models): its disentangled attention holds the content scores,
  both position scores (and, before gathering, their scores against every relative position),
  their sum and softmax: about five attention squares, always materialised.
- **generation** (`generation`): the static cache for prompt and new tokens, the prompt's pass
  (logits of its last position only) or a step's logits copied and log-softmaxed, and the
  log-probs kept (chosen token and the top alternatives; never the whole vocabulary's scores).

The counts were read off a CPU with `LiveBytes`, which counts the bytes of every tensor storage
created inside it and alive at once (views and in-place results share their input's storage and
are not counted twice); `tests/unit/test_memory.py` holds the model to within 20 % of it at three
shapes of each path. A GPU's caching allocator rounds and keeps blocks on top of this: the
backend measures the first batch's peak there and corrects its factor (`runtime`).

>>> from types import SimpleNamespace as C
>>> llama7b = Shape.of(C(hidden_size=4096, intermediate_size=11008, num_attention_heads=32, num_hidden_layers=32, vocab_size=32000))
>>> m = MemoryModel(llama7b, "bf16")
>>> m.kv(1, 1) / 2**20  # MiB of key/value cache a token
0.5
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2}


@dataclass(frozen=True)
class Shape:
    """What the memory model needs of a transformers config, whatever the architecture calls it."""

    hidden: int
    ff: int
    heads: int
    kv_heads: int
    head_dim: int
    layers: int
    vocab: int
    gated: bool  # a gated feed-forward (Llama's SwiGLU, T5 v1.1's gated GELU) keeps three activations
    rotary: bool  # rotary position tables (Llama) beside the hidden states
    decoder_layers: int = 0  # seq2seq: the decoder's layers (its own key/value cache is one step)
    span: int = 0  # DeBERTa's disentangled attention: relative positions each side (its position buckets); 0 elsewhere
    span_by_width: bool = False  # DeBERTa v1: a pass attends over at most its own width of them

    @classmethod
    def of(cls, config: Any) -> Shape:
        def get(*names: str, default: int = 0) -> int:
            return next((int(v) for n in names if (v := getattr(config, n, None))), default)

        hidden = get("hidden_size", "d_model", "n_embd", default=1024)
        heads = get("num_attention_heads", "num_heads", "n_head", default=16)
        head_dim = get("head_dim", "d_kv", default=hidden // max(heads, 1))
        act = str(getattr(config, "feed_forward_proj", "") or getattr(config, "hidden_act", ""))
        model_type = str(getattr(config, "model_type", ""))
        return cls(
            hidden=hidden,
            ff=get("intermediate_size", "d_ff", "n_inner", default=4 * hidden),
            heads=heads,
            kv_heads=get("num_key_value_heads", default=heads),
            head_dim=head_dim,
            layers=get("num_hidden_layers", "num_layers", "n_layer", default=12),
            vocab=get("vocab_size", default=32000),
            gated=act.startswith("gated") or model_type in {"llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "phi3", "olmo2"},
            rotary=model_type not in {"gpt2", "t5", "mt5", "umt5", "bert", "roberta", "deberta", "deberta-v2"},
            decoder_layers=get("num_decoder_layers", default=0) or (get("num_layers") if model_type in {"t5", "mt5", "umt5"} else 0),
            span=_deberta_span(config) if model_type in {"deberta", "deberta-v2"} and getattr(config, "relative_attention", False) else 0,
            span_by_width=model_type == "deberta",
        )


def _deberta_span(config: Any) -> int:
    """Relative positions each side, as transformers reads them: the position buckets when set
    (above 0), else `max_relative_positions`, which below 1 (DeBERTa v1's -1) means
    `max_position_embeddings`."""
    buckets = int(getattr(config, "position_buckets", -1) or -1)
    if buckets > 0:
        return buckets
    span = int(getattr(config, "max_relative_positions", -1) or -1)
    return span if span >= 1 else int(getattr(config, "max_position_embeddings", 512) or 512)


class MemoryModel:
    """Peak bytes beyond the weights of each path (see the module docstring), times `overhead`:
    1 for the live tensors counted on a CPU, the allocator's rounding on a GPU."""

    def __init__(self, shape: Shape, dtype: str, attention: str | None = None, overhead: float = 1.0):
        self.shape, self.dtype, self.overhead = shape, dtype, overhead
        self.eager = attention == "eager"
        self.e = BYTES[dtype]

    def _scaled(self, n: float) -> int:
        return int(n * self.overhead)

    def tokens(self, n: int, width: int = 128) -> int:
        """What a padded scoring pass over `n` tokens costs (rows of `width`, a quarter of each
        scored): how a budget given in tokens (`token_budget=`) reads in bytes."""
        w = min(n, width)
        return self.forward(-(-n // w), w, max(1, w // 4))

    def kv(self, rows: int, tokens: int) -> int:
        """A key/value cache of `rows` x `tokens` positions, every layer."""
        s = self.shape
        return self._scaled(2 * s.layers * s.kv_heads * s.head_dim * self.e * rows * tokens)

    def _phases(self, rows: int, width: int, attended: int, kept: int) -> tuple[int, int, int, int]:
        """(what every phase of a layer holds, the feed-forward's own, attention's own, the logits
        phase) of one pass over rows x width new tokens attending over `attended` positions each,
        with logits for `kept` positions a row, before the overhead and without any cache."""
        s, e = self.shape, self.e
        t = rows * width
        stream = 4 * t * s.hidden * e  # embeddings, two residual sums, the normed input
        side = rows * width * attended + (2 * t * s.head_dim * e if s.rotary else 0)  # the mask (bool), rotary tables
        mlp = (3 if s.gated else 2) * t * s.ff * e
        qkv = (2 * s.heads + 4 * s.kv_heads) * t * s.head_dim * e  # q, k, v, rotated q and k, the output
        scores = 2 * rows * s.heads * width * attended * 4 if self.eager else 0  # fp32 scores and softmax
        if s.span:  # DeBERTa: content and both position scores, their sum and softmax; the positions' scores before gathering
            span = min(s.span, attended) if s.span_by_width else s.span
            scores = 5 * rows * s.heads * width * attended * e + rows * s.heads * width * 2 * span * e
        # the logits of the scored positions once the layers are done: in fp32 (a copy of them when
        # the model computes in 16 bits, freed as it is made) and their log-softmax
        logits = rows * kept * s.vocab * max(e + 4, 8)
        return stream + side, mlp, qkv + scores, logits

    def _pass(self, rows: int, width: int, attended: int, kept: int) -> int:
        base, mlp, attention, logits = self._phases(rows, width, attended, kept)
        return max(base + max(mlp, attention), logits)

    def forward(self, rows: int, width: int, kept: int, past: int = 0) -> int:
        """A causal pass over padded rows of `width` tokens after `past` cached positions, scoring
        `kept` positions a row (the padded scorer keeps no cache: `past` 0)."""
        return self._scaled(self._pass(rows, width, past + width, kept))

    def leaves(self, rows: int, prefix: int, width: int, kept: int) -> int:
        """The runner's leaf batch: each row's copy of a `prefix`-token cache; during the pass each
        layer's keys and values are extended by the rows' own `width` tokens into new tensors
        (the old freed after), so the peak is the grown cache with one layer's tensor in flight
        beside attention's activations, or the grown cache beside the logits."""
        full = self.kv(rows, prefix + width)
        in_flight = full // (2 * max(self.shape.layers, 1))
        base, mlp, attention, logits = self._phases(rows, width, prefix + width, kept)
        picked = rows * self.shape.vocab * 4  # a row's next-token log-probs taken out for decoding or top-k
        return full + self._scaled(max(in_flight / self.overhead + base + attention, base + mlp, logits + picked))

    def decoding(self, rows: int, width: int, new: int, top: int = 0) -> int:
        """One batch of the runner's greedy decoding, of rows whose prompts (`width` tokens) have
        run: their caches moved into a static cache for `new` more tokens, and per step the logits
        of one position and the log-probs kept. (The prompts' own caches stay alive until every
        batch is decoded: the runner counts them apart.)"""
        step = rows * self.shape.vocab * 8 + rows * new * (1 + 2 * top) * 8
        return self.kv(rows, width + new) + self._scaled(step)

    def seq2seq(self, rows: int, width: int) -> int:
        """An encoder pass over rows x width tokens, then one decoder step with its logits. T5's
        position bias is broadcast to every row and copied under the mask (two fp32 tensors of
        rows x heads x width x width in attention); eager attention also keeps its softmax into
        the feed-forward, and its mask is a float."""
        s, e = self.shape, self.e
        t = rows * width
        square = rows * s.heads * width * width * 4
        table = width * width * s.heads * 4  # the bias before it is broadcast
        attention = 3 * t * s.hidden * e + 3 * t * s.heads * s.head_dim * e + 2 * square + (rows * width * width * 4 if self.eager else 0)
        mlp = 4 * t * s.hidden * e + (3 if s.gated else 2) * t * s.ff * e + (square if self.eager else 0)
        decoder = t * s.hidden * e + rows * s.vocab * max(e + 4, 8)  # the encoder's output beside one step's logits
        return self._scaled(table + max(attention, mlp, decoder))

    def generation(self, rows: int, width: int, new: int, top: int = 0) -> int:
        """Greedy or sampled decoding of `new` tokens after prompts padded to `width`: the static
        cache for every position, the prompt's pass (logits of its last position), and the
        log-probs kept per step (the chosen token's and `top` alternatives, with their ids)."""
        kept = rows * new * (1 + 2 * top) * 8
        # beside the model's logits: generate()'s fp32 copy of the last position's and its log-softmax
        copies = rows * self.shape.vocab * 8
        return self.kv(rows, width + new) + self._scaled(self._pass(rows, width, width + new, 1) + copies + kept)


class LiveBytes:
    """`with LiveBytes() as lb:` counts the bytes of every tensor storage created inside and
    alive at once; `lb.peak` is the most at any moment (what `MemoryModel` predicts on a CPU). A
    result that shares an input's storage (a view, an in-place op) is not counted again."""

    def __init__(self) -> None:
        self.live = self.peak = 0
        self._seen: dict[int, int] = {}
        self._mode: Any = None

    def __enter__(self) -> LiveBytes:
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_flatten

        counter = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                out = func(*args, **(kwargs or {}))
                given = {a.untyped_storage().data_ptr() for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)}
                for t in tree_flatten(out)[0]:
                    if isinstance(t, torch.Tensor):
                        counter._track(t.untyped_storage(), given)
                return out

        self._mode = Mode()
        self._mode.__enter__()
        return self

    def _track(self, storage: Any, given: set[int]) -> None:
        key, size = storage.data_ptr(), storage.nbytes()
        if key in given or key in self._seen or size == 0:
            return
        self._seen[key] = size
        self.live += size
        self.peak = max(self.peak, self.live)
        weakref.finalize(storage, self._gone, key)

    def _gone(self, key: int) -> None:
        size = self._seen.pop(key, 0)
        self.live -= size

    def __exit__(self, *exc: object) -> None:
        self._mode.__exit__(*exc)
