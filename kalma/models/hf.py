"""Hugging Face transformers backends: causal LMs (chat + scoring), TRUE-style seq2seq
entailment, and MNLI-style classifiers, from a hub id or a local path.

How they use the hardware (the same for every backend here). Every device decision is made in
this module and said by `runtime()`, which reports and benchmark rows carry:
- **dtype**: bf16 on CUDA, fp32 on the CPU, unless the spec asks (`hf:ID@fp32`, `@bf16`,
  `@fp16`, `@tf32`). fp32 means fp32: TF32 matmuls only with `@tf32` (fp32 weights), switched on
  around this backend's own passes, never process-wide. A non-fp32 dtype is part of the
  backend's spec, and a run on a GPU is keyed apart from one on the CPU, so their results never
  share cache entries, and every report names dtype and device (`@bf16 on NVIDIA H100 80GB HBM3`).
- **loading**: on CUDA, straight to the GPU(s) with `device_map="auto"` (a model larger than
  one GPU is split across them), never assembled in host memory first. T5 runs eager attention
  on CUDA: its relative-position bias reaches SDPA as an fp32 mask that no fused kernel takes,
  and the unfused fallback was 1.58x slower than eager on an H100 (`attention=` overrides).
- **batches**: items are sorted by token length and cut into batches of at most
  `token_budget` padded tokens (padding to a multiple of 8), so short items are not padded to
  long ones. On CUDA the budget comes from a memory model of one token's activations (feed-
  forward width, attention heads and row width, logits; `activation_bytes`) against the free
  memory; on the CPU it is 1,024; `token_budget=` or KALMA_TOKEN_BUDGET overrides. A batch
  that still runs out of GPU memory is split in two and the budget halved, and said.
- **LM scoring**: sequences are left-padded, so every scored token sits at the end of its row,
  and logits are computed only for those last positions (`logits_to_keep`), not for the
  knowledge context before them; no key/value cache is kept. Shared prefixes run once where
  the call's plan saves a real share of the tokens (`SHARED_MIN_SHARE`), on any device.
- **generation**: greedy decoding on the shared-prefix runner on the CPU and where prompts share
  much; otherwise, on CUDA, transformers' `generate()` with a static key/value cache (which it
  compiles into CUDA graphs once).
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import BackendError
from ..seeds import item_seed
from .base import LLM, Entailment, Generation, GenParams, LMScorer, Message, TokenLogprob

log = logging.getLogger(__name__)

DTYPES = ("fp32", "tf32", "bf16", "fp16")
PAD_MULTIPLE = 8
# The shared-prefix runner pays only when the plan skips this share of the tokens: it runs a pass
# per node, where padded rows run one (on unshared items an H100 measured it 6.5x slower).
SHARED_MIN_SHARE = 0.25


@contextmanager
def loading(path: str) -> Iterator[None]:
    """A model that cannot be loaded (no such path, no hub access, not a model) is a
    BackendError naming it, not a traceback."""
    import transformers

    from ..errors import BackendError, one_line

    # a bar that fills in a second ("Loading weights") says nothing a user can act on
    bars = transformers.utils.logging.is_progress_bar_enabled()
    transformers.utils.logging.disable_progress_bar()
    try:
        yield
    except (OSError, ValueError) as exc:
        raise BackendError(f"cannot load the model {path!r} ({one_line(exc)})") from None
    finally:
        if bars:
            transformers.utils.logging.enable_progress_bar()


def model_ref(path: str) -> str:
    """`path` if it can name a model: an existing local folder, or a hub id (`name` or
    `org/name`). A filesystem path that does not exist is refused at once, before any work."""
    from ..errors import BackendError

    looks_local = path.startswith(("/", "./", "../", "~")) or path.count("/") > 1 or os.sep != "/" and os.sep in path
    if looks_local and not os.path.isdir(os.path.expanduser(path)):
        raise BackendError(f"cannot load the model {path!r} (no such folder)")
    return path


def hub_ready(ref: str) -> None:
    """For a hub id not in the local cache: fail in seconds, not after the hub client's rounds of
    retries, when the hub cannot be reached (HF_HUB_OFFLINE set, or no answer from HF_ENDPOINT
    within 3 s), saying how to point the backend at a local copy."""
    import socket
    from urllib.parse import urlsplit

    from huggingface_hub import constants, try_to_load_from_cache

    if os.path.isdir(os.path.expanduser(ref)) or isinstance(try_to_load_from_cache(ref, "config.json"), str):
        return
    from ..errors import HubMissing

    if constants.HF_HUB_OFFLINE:
        raise HubMissing(ref, "it is not in the local Hugging Face cache and HF_HUB_OFFLINE is set")
    endpoint = urlsplit(constants.ENDPOINT)
    try:
        socket.create_connection((endpoint.hostname or "", endpoint.port or (443 if endpoint.scheme == "https" else 80)), timeout=3).close()
    except OSError as exc:
        raise HubMissing(
            ref,
            f"it is not in the local Hugging Face cache and {constants.ENDPOINT} cannot be reached ({exc.strerror or type(exc).__name__}) "
            "(set HF_HUB_OFFLINE=1 to skip the hub)",
        ) from None


def split_dtype(ref: str) -> tuple[str, str | None]:
    """`ID@bf16` -> (`ID`, `bf16`); a ref without a known suffix has none.

    >>> split_dtype("google/t5_xxl_true_nli_mixture@bf16"), split_dtype("/models/x")
    (('google/t5_xxl_true_nli_mixture', 'bf16'), ('/models/x', None))
    """
    head, sep, tail = ref.rpartition("@")
    return (head, tail) if sep and tail in DTYPES else (ref, None)


def cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def device_name() -> str:
    """What runs the models: `CPU`, or the GPU's name (and how many there are)."""
    if not cuda():
        return "CPU"
    import torch

    n = torch.cuda.device_count()
    return torch.cuda.get_device_name(0) + (f" (x{n}, split by device_map)" if n > 1 else "")


def resolve_dtype(requested: str | None) -> str:
    """The dtype to run in: as asked, else bf16 on CUDA and fp32 on the CPU."""
    from ..errors import ConfigError

    if requested is not None and requested not in DTYPES:
        raise ConfigError(f"dtype {requested!r}: one of {', '.join(DTYPES)}")
    return requested or ("bf16" if cuda() else "fp32")


@contextmanager
def matmul_precision(dtype: str) -> Iterator[None]:
    """TF32 matmuls for `tf32` only, for the passes inside; the process's own settings after."""
    import torch

    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = dtype == "tf32"
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


ATTENTIONS = ("eager", "sdpa", "flex_attention")


def attention_for(kind: str, path: str, requested: str | None) -> str | None:
    """The attention implementation to load with: as asked, else eager for T5 on CUDA (see the
    module docstring), else transformers' own choice (None)."""
    from ..errors import ConfigError

    if requested is not None:
        if requested not in ATTENTIONS:
            raise ConfigError(f"attention {requested!r}: one of {', '.join(ATTENTIONS)}")
        return requested
    if kind != "seq2seq" or not cuda():
        return None
    import transformers

    with loading(path):
        model_type = transformers.AutoConfig.from_pretrained(path).model_type
    return "eager" if model_type in {"t5", "mt5", "umt5"} else None


@functools.lru_cache(maxsize=4)
def load(kind: str, path: str, dtype: str, identity: str | None = None, attention: str | None = None) -> tuple[Any, Any]:
    """(tokenizer, model) of `kind` (causal, seq2seq, classifier), loaded once per process and
    `identity` (a local folder's content): weights written over the folder load again."""
    import torch
    import transformers

    auto = {
        "causal": transformers.AutoModelForCausalLM,
        "seq2seq": transformers.AutoModelForSeq2SeqLM,
        "classifier": transformers.AutoModelForSequenceClassification,
    }[kind]
    kwargs: dict[str, Any] = {"dtype": {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]}
    if cuda():
        kwargs["device_map"] = "auto"  # weights go straight to the GPU(s), split when one is not enough
    if attention:
        kwargs["attn_implementation"] = attention
    with loading(path):
        tok = transformers.AutoTokenizer.from_pretrained(path)
        model = auto.from_pretrained(path, **kwargs).eval()
    if kind == "causal" and tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok, model


# One token's activations grow with everything alive at once inside a layer; in no_grad inference
# only one layer's are. Counted in elements: the residual stream and its norms (6 x hidden), the
# query, key, value and output projections (4 x heads x head width), the feed-forward (3 x its
# width: input, gate or activation, product), and in fp32 the attention scores, bias and
# probabilities of its row (3 x heads x row width, 4 bytes). PyTorch's caching allocator rounds
# and keeps blocks: an H100 measured T5-11B at 1.7 MB a token, 2.5 times the count (issue 35).
ALLOCATOR_OVERHEAD = 2.5
MEMORY_SHARE = 0.5  # of the free memory after the weights: larger budgets measured slower on T5-11B


def activation_bytes(config: Any, dtype: str, width: int = 512, logits_share: float = 0.25) -> int:
    """What one padded token costs during a forward pass of `config`'s model (see above), for rows
    of `width` tokens of which `logits_share` get a row of fp32 logits.

    >>> from types import SimpleNamespace as C
    >>> t5_11b = C(d_model=1024, d_ff=65536, num_heads=128, d_kv=128, vocab_size=32128)
    >>> round(activation_bytes(t5_11b, "bf16", width=80) / 1e6, 2)  # MB a token; measured 1.7 on an H100
    1.68
    """

    def get(*names: str, default: int = 0) -> int:
        return next((int(v) for n in names if (v := getattr(config, n, None))), default)

    hidden = get("hidden_size", "d_model", "n_embd", default=1024)
    ff = get("intermediate_size", "d_ff", "n_inner", default=4 * hidden)
    heads = get("num_attention_heads", "num_heads", "n_head", default=16)
    head_width = get("head_dim", "d_kv", default=hidden // max(heads, 1))
    vocab = get("vocab_size", default=32000)
    size = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2}[dtype]
    per_token = size * (6 * hidden + 4 * heads * head_width + 3 * ff) + 4 * 3 * heads * width
    return int(ALLOCATOR_OVERHEAD * per_token + logits_share * 4 * vocab)


def default_token_budget(model: Any, dtype: str = "bf16", width: int = 512) -> tuple[int, str]:
    """Padded tokens per batch, and where the figure came from: KALMA_TOKEN_BUDGET, else from the
    device. On CUDA `MEMORY_SHARE` of the free memory over `activation_bytes`. On the CPU 1,024: a
    forward pass there is compute-bound (SmolLM2: 520 tokens/s for one 400-token row, 601 for
    eight), so batches only pay while they stay small and even."""
    if os.environ.get("KALMA_TOKEN_BUDGET"):
        return max(PAD_MULTIPLE, int(os.environ["KALMA_TOKEN_BUDGET"])), "KALMA_TOKEN_BUDGET"
    if not cuda():
        return 1024, "the CPU default"
    import torch

    free, _ = torch.cuda.mem_get_info()  # counts blocks PyTorch caches as used: measured after the weights load
    per_token = activation_bytes(model.config, dtype, width)
    budget = int(min(max(free * MEMORY_SHARE / per_token, 512), 1 << 17))
    return budget, f"memory model: {MEMORY_SHARE:.0%} of {free / 2**30:.1f} GiB free at {per_token / 1e6:.2f} MB a token"


def token_batches(lengths: Sequence[int], budget: int, max_items: int = 1024) -> list[list[int]]:
    """Indices grouped into batches, shortest first, each at most `budget` padded tokens
    (rows x longest row rounded up to a multiple of 8) and `max_items` rows.

    >>> token_batches([5, 100, 7, 6, 90], budget=256)
    [[0, 3, 2], [4, 1]]
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        width = -(-max(lengths[i], 1) // PAD_MULTIPLE) * PAD_MULTIPLE
        if cur and (width * (len(cur) + 1) > budget or len(cur) >= max_items):
            batches.append(cur)
            cur = []
        cur.append(i)
    if cur:
        batches.append(cur)
    return batches


class HFBackend:
    """What every transformers backend shares: model reference, dtype, attention, batching
    policy, and the runtime it all resolves to (`runtime()`)."""

    kind = "causal"
    prefix = "hf"
    budget_factor = 1  # generation decodes many steps per batch: it gets a larger share

    def __init__(
        self,
        ref: str,
        spec: str | None = None,
        *,
        dtype: str | None = None,
        token_budget: int | None = None,
        batching: Literal["tokens", "items"] = "tokens",
        batch_size: int = 16,
        attention: str | None = None,
    ):
        path, suffix = split_dtype(ref)
        self.path = model_ref(path)
        hub_ready(self.path)  # at construction: before any work or progress bar
        self.dtype = resolve_dtype(dtype or suffix)
        # fp32 is the implicit identity; any other dtype is named, so results never mix
        self.spec = (spec or f"{self.prefix}:{path}") + ("" if self.dtype == "fp32" else f"@{self.dtype}")
        self.token_budget, self.batching, self.batch_size = token_budget, batching, batch_size
        self.attention = attention_for(self.kind, self.path, attention)
        self._budget: tuple[int, str] | None = (token_budget, "token_budget=") if token_budget else None
        self.paths_taken: dict[str, int] = {}  # scoring or decoding path -> calls that took it

    _identity: str | None = None  # as of the last public call: what `model()` loads, without re-reading the folder per batch

    def model(self) -> tuple[Any, Any]:
        return load(self.kind, self.path, self.dtype, self._identity or self.cache_identity(), self.attention)

    def cache_identity(self) -> str | None:
        """The spec, and for a local folder its content: a checkpoint written over the same folder
        is another model, never answered from the cache of the one before. A GPU's results are
        keyed apart from the CPU's (other kernels, other rounding). Asked once per public call
        (answering, scoring, judging), not per batch."""
        self._identity = self.spec + ("|cuda" if cuda() else "") + (f"|{self.attention}" if self.attention else "")
        if os.path.isdir(os.path.expanduser(self.path)):
            from ..resume import path_digest

            self._identity = f"{self._identity}|{path_digest(os.path.expanduser(self.path))}"
        return self._identity

    def runs_as(self) -> str:
        """How this backend runs, as every report names it: `@bf16 on NVIDIA H100 80GB HBM3`."""
        tf32 = (", TF32 matmuls" if self.dtype == "tf32" else ", TF32 off") if cuda() and self.dtype in {"fp32", "tf32"} else ""
        attention = f", {self.attention} attention" if self.attention else ""
        return f"@{self.dtype} on {device_name()}{tf32}{attention}"

    def runtime(self) -> dict[str, Any]:
        """Every device decision, resolved: for provenance, reports and benchmark rows."""
        out: dict[str, Any] = {"spec": self.spec, "device": device_name(), "dtype": self.dtype, "tf32": self.dtype == "tf32" and cuda()}
        out["attention"] = self.attention or "transformers' default"
        if self._budget is not None:
            out["token_budget"], out["budget_from"] = self._budget
        if self.paths_taken:
            out["paths"] = dict(self.paths_taken)
        return out

    def numerics(self) -> Any:
        """The context every forward pass of this backend runs in: no autograd, TF32 as asked."""
        import torch

        stack = ExitStack()
        stack.enter_context(torch.no_grad())
        stack.enter_context(matmul_precision(self.dtype))
        return stack

    def took(self, path: str) -> None:
        self.paths_taken[path] = self.paths_taken.get(path, 0) + 1

    def within_memory(self, batch: Sequence[Any], run: Callable[[Sequence[Any]], list[Any]]) -> list[Any]:
        """`run(batch)`, or, when it runs out of GPU memory, its two halves (each the same way),
        with the budget halved for the batches planned after it and the reason recorded."""
        import torch

        try:
            with self.numerics():
                return run(batch)
        except torch.cuda.OutOfMemoryError:
            if len(batch) < 2:
                raise BackendError(f"{self.spec}: one item does not fit in GPU memory ({device_name()})") from None
        torch.cuda.empty_cache()
        budget, _ = self._budget or (self.budget(), "")
        self._budget = (max(PAD_MULTIPLE, budget // 2), f"halved after running out of GPU memory on {len(batch)} rows")
        log.warning("%s: out of GPU memory on %d rows; halved the token budget to %d", self.spec, len(batch), self._budget[0])
        mid = len(batch) // 2
        return self.within_memory(batch[:mid], run) + self.within_memory(batch[mid:], run)

    def window(self) -> int | None:
        """How many positions the model attends over; None when its config sets no limit (T5)."""
        cfg = self.model()[1].config
        n = getattr(cfg, "max_position_embeddings", None) or getattr(cfg, "n_positions", None)
        return int(n) if n else None

    def budget(self) -> int:
        """Padded tokens per forward pass (the policy above), computed once the model is loaded."""
        if self._budget is None:
            self._budget = default_token_budget(self.model()[1], self.dtype)
        return self._budget[0]

    def plan(self, lengths: Sequence[int]) -> list[list[int]]:
        """Batches by token budget (sorted), or `batching="items"`: fixed-size, input order."""
        if self.batching == "items":
            return [list(range(i, min(i + self.batch_size, len(lengths)))) for i in range(0, len(lengths), self.batch_size)]
        return token_batches(lengths, self.budget() * self.budget_factor)

    def prefix_plan(self, seqs: Sequence[tuple[int, ...]], limit: int) -> list[list[int]]:
        """Batches for the shared-prefix runner: sequences in token order, so that those sharing a
        prefix meet in one batch, cut when the tokens a batch adds beyond each sequence's common
        prefix with the previous one (about what the runner computes) exceed `limit`."""
        order = sorted(range(len(seqs)), key=lambda i: seqs[i])
        batches: list[list[int]] = []
        cur: list[int] = []
        fresh = 0
        prev: tuple[int, ...] = ()
        for i in order:
            ids = seqs[i]
            shared = next((k for k, (a, b) in enumerate(zip(prev, ids)) if a != b), min(len(prev), len(ids)))
            if cur and fresh + len(ids) - shared > limit:
                batches.append(cur)
                cur, fresh, shared = [], 0, 0
            cur.append(i)
            fresh += len(ids) - shared
            prev = ids
        return batches + ([cur] if cur else [])

    def shared_runner(self, min_saved: int = 64) -> Any:
        """This backend's shared-prefix runner (`kalma.models.shared_prefix`), made once: it
        remembers recent contexts from one call to the next."""
        from .shared_prefix import SharedPrefixRunner

        if getattr(self, "_runner", None) is None:
            tok, model = self.model()
            pad = tok.pad_token_id if tok.pad_token_id is not None else 0
            self._runner = SharedPrefixRunner(model, pad_id=pad, token_budget=self.budget() * self.budget_factor, min_saved=min_saved)
        return self._runner


def render_chat(tok: Any, messages: list[Message]) -> str:
    """The model's own chat template when it has one, else a plain transcript."""
    if getattr(tok, "chat_template", None):
        return str(tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))
    lines = [f"{m['role'].capitalize()}: {m['content']}" for m in messages]
    return "\n".join(lines) + "\nAssistant:"


@dataclass(frozen=True)
class Prompt:
    """One chat as the model reads it: its messages (for the per-item seed) and its token ids."""

    chat: list[Message] = field(compare=False)
    ids: tuple[int, ...]


class HFCausalLM(HFBackend, LLM):
    """`hf:<hub id or path>[@dtype]`: batched generation. Greedy decoding runs on the
    shared-prefix runner: prompts sharing a prefix (the baseline's instruction and
    demonstration, a judge's answer under four criteria) run it once, then decode together.
    Sampling decodes left-padded rows, each with its own seeded generator. `batching="items"`
    keeps transformers' generate(), one fixed batch at a time: the reference the tests compare
    against. Batches may hold 8x the scoring budget of prompt tokens: decoding runs one step
    per new token for the whole batch, so fewer, fuller batches pay."""

    budget_factor = 8

    def __init__(
        self,
        ref: str,
        spec: str | None = None,
        *,
        dtype: str | None = None,
        token_budget: int | None = None,
        batching: Literal["tokens", "items"] = "tokens",
        batch_size: int = 16,
        attention: str | None = None,
        decode: Literal["auto", "runner", "static"] = "auto",
    ):
        super().__init__(ref, spec, dtype=dtype, token_budget=token_budget, batching=batching, batch_size=batch_size, attention=attention)
        self.decode = decode  # greedy decoding: the policy (auto), or one path for benchmarks and tests

    def _prepare(self, chats: Sequence[list[Message]]) -> list[Prompt]:
        tok, _ = self.model()
        return [Prompt(list(c), tuple(tok(render_chat(tok, c), add_special_tokens=False)["input_ids"])) for c in chats]

    _static = False  # this call decodes with transformers' static cache (see `_plan`)

    def _plan(self, prompts: Sequence[Prompt]) -> list[list[int]]:
        if self.batching == "items":
            return self.plan([len(p.ids) for p in prompts])
        from .shared_prefix import Request, saved_share

        # a GPU decodes faster with transformers' static cache than on the runner, unless the
        # prompts share much (G-Eval's criteria under one answer): then the runner's prefixes pay
        if self.decode == "auto":
            self._static = cuda() and saved_share([Request(p.ids, len(p.ids)) for p in prompts], 64) < SHARED_MIN_SHARE
        else:
            self._static = self.decode == "static"
        if self._static:
            return self.plan([len(p.ids) for p in prompts])
        return self.prefix_plan([p.ids for p in prompts], self.budget() * self.budget_factor)

    def _generate(self, batch: Sequence[Prompt], params: GenParams) -> list[Generation]:
        return self.within_memory(batch, lambda b: self._decode(b, params))

    def _decode(self, batch: Sequence[Prompt], params: GenParams) -> list[Generation]:
        import torch

        tok, model = self.model()
        limit, longest = self.window(), max(len(p.ids) for p in batch)
        if limit is not None and longest + params.max_tokens > limit:  # cutting a prompt would drop its instructions
            raise BackendError(
                f"{self.spec}: a prompt of {longest} tokens plus {params.max_tokens} to generate exceeds the model's {limit} positions; "
                "give it less knowledge or use a longer-context model"
            )
        stops = {t for t in (tok.eos_token_id, tok.pad_token_id) if t is not None}
        steps: list[list[tuple[int, float, dict[int, float]]]]  # per prompt: (token, log-prob, top alternatives)
        if params.temperature == 0 and self.batching == "tokens" and not self._static:
            from .shared_prefix import Request

            self.took("greedy: shared-prefix runner")
            requests = [Request(p.ids, len(p.ids), top=params.logprobs, decode=params.max_tokens, stop=tuple(stops)) for p in batch]
            steps = [[(s.token, s.logprob, dict(s.top)) for s in r.generated] for r in self.shared_runner().run(requests)]
        else:
            width = -(-longest // PAD_MULTIPLE) * PAD_MULTIPLE
            fill = tok.pad_token_id if tok.pad_token_id is not None else 0
            enc = {
                "input_ids": torch.tensor([[fill] * (width - len(p.ids)) + list(p.ids) for p in batch], device=model.device),
                "attention_mask": torch.tensor([[0] * (width - len(p.ids)) + [1] * len(p.ids) for p in batch], device=model.device),
            }
            if params.temperature > 0:
                # Each row samples from its own generator, seeded by the run seed and the chat itself:
                # an answer never depends on what else shares its batch.
                self.took("sampling: padded rows")
                seeds = [item_seed(params.seed, p.chat) if params.seed is not None else int(torch.randint(0, 1 << 31, ()).item()) for p in batch]
                new, scores = _sample(model, enc, params, seeds, tok.eos_token_id, tok.pad_token_id)
            else:
                static = {"cache_implementation": "static"} if self._static else {}
                self.took("greedy: generate() with a static cache" if static else "greedy: generate()")
                out = model.generate(
                    **enc,
                    max_new_tokens=params.max_tokens,
                    do_sample=False,
                    temperature=None,
                    top_p=None,
                    top_k=None,
                    pad_token_id=tok.pad_token_id,
                    output_scores=True,
                    return_dict_in_generate=True,
                    **static,
                )
                new, scores = out.sequences[:, width:], out.scores
            steps = []
            for i, ids in enumerate(new.tolist()):
                row = []
                for n, t in enumerate(ids):
                    logp = torch.log_softmax(scores[n][i].float(), dim=-1)
                    top = torch.topk(logp, params.logprobs) if params.logprobs else None
                    row.append((t, float(logp[t]), {int(k): float(v) for v, k in zip(top.values, top.indices)} if top is not None else {}))
                steps.append(row)
        return [self._generation(p, row, stops, params, tok) for p, row in zip(batch, steps)]

    def _generation(self, prompt: Prompt, row: list[tuple[int, float, dict[int, float]]], stops: set[int], params: GenParams, tok: Any) -> Generation:
        """The reply up to its first stop token, with log-probs when asked."""
        n = next((k for k, (t, _, _) in enumerate(row) if t in stops), None)
        kept = row if n is None else row[:n]
        lps = None
        if params.logprobs > 0:
            lps = [TokenLogprob(tok.decode([t]), lp, {tok.decode([k]): v for k, v in top.items()}) for t, lp, top in kept]
        return Generation(
            text=tok.decode([t for t, _, _ in kept], skip_special_tokens=True).strip(),
            model=self.spec,
            logprobs=lps,
            prompt_tokens=len(prompt.ids),
            completion_tokens=len(kept),
            finish_reason="stop" if n is not None else "length",
        )


def _sample(model: Any, enc: Any, params: GenParams, seeds: Sequence[int], eos: int | None, pad: int | None) -> tuple[Any, list[Any]]:
    """Sampled decoding of a left-padded batch, each row drawing from its own seeded generator:
    (new token ids [rows, steps], the processed scores of each step). Temperature and top-p are
    applied as transformers' warpers apply them, so the scores are the same."""
    import torch

    from .shared_prefix import cache_arg, cache_of

    rows = enc["input_ids"].shape[0]
    gens = [torch.Generator(device=model.device).manual_seed(s) for s in seeds]
    mask = enc["attention_mask"]
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    current, past = enc["input_ids"], None
    finished = torch.zeros(rows, dtype=torch.bool, device=model.device)
    fill = pad if pad is not None else (eos if eos is not None else 0)
    tokens, scores = [], []
    for _ in range(params.max_tokens):
        out = model(input_ids=current, attention_mask=mask, position_ids=positions, **cache_arg(model, past), use_cache=True, logits_to_keep=1)
        past = cache_of(out)
        logits = out.logits[:, -1, :].float() / params.temperature
        if params.top_p < 1.0:  # keep the smallest set of tokens whose probability reaches top_p
            ordered, order = torch.sort(logits, descending=False)
            drop = ordered.softmax(-1).cumsum(-1) <= 1 - params.top_p
            drop[:, -1] = False
            logits = logits.masked_fill(drop.scatter(1, order, drop), float("-inf"))
        scores.append(logits)
        probs = logits.softmax(-1)
        step = torch.stack([torch.multinomial(probs[i], 1, generator=gens[i])[0] for i in range(rows)])
        step = torch.where(finished, torch.full_like(step, fill), step)
        tokens.append(step)
        finished |= (step == eos) if eos is not None else torch.zeros_like(finished)
        if bool(finished.all()):
            break
        current = step[:, None]
        mask = torch.cat([mask, torch.ones((rows, 1), dtype=mask.dtype, device=mask.device)], dim=-1)
        positions = positions[:, -1:] + 1
    return torch.stack(tokens, dim=1), scores


@dataclass(frozen=True)
class Encoded:
    """One (context, text) item as the scorer runs it: token ids with BOS, the index of the
    first text token, and the character span in `text` of each text token."""

    ids: tuple[int, ...]
    start: int
    spans: tuple[tuple[int, int], ...]


class HFCausalScorer(HFBackend, LMScorer):
    """`hf:<hub id or path>[@dtype]` as an LM scorer: token log-probs of a text given a context.

    Paths (all give the same log-probs, within float rounding):
    - `shared_prefix=True` (default): items that share a prefix (the builder's candidates after
      one paragraph, texts under the same knowledge) run it once (`kalma.models.shared_prefix`),
      where it pays (the module's policy; `"always"` forces it);
    - `shared_prefix=False, logits="scored"`: left-padded rows, logits only at the scored positions;
    - `logits="all"`: right-padded rows with logits everywhere (the reference the tests compare
      against, and the oldest path the benchmarks measure)."""

    def __init__(
        self,
        ref: str,
        spec: str | None = None,
        *,
        dtype: str | None = None,
        token_budget: int | None = None,
        batching: Literal["tokens", "items"] = "tokens",
        batch_size: int = 16,
        attention: str | None = None,
        logits: Literal["scored", "all"] = "scored",
        shared_prefix: bool | Literal["always"] = True,
        min_shared: int = 64,
    ):
        super().__init__(ref, spec, dtype=dtype, token_budget=token_budget, batching=batching, batch_size=batch_size, attention=attention)
        self.logits = logits
        self.shared_prefix = bool(shared_prefix) and logits == "scored" and batching == "tokens"
        self.always_shared = shared_prefix == "always"  # the runner whatever the policy says: for benchmarks
        self.min_shared = min_shared  # token positions a shared prefix must save to get a pass of its own
        self._cut_warned = False

    def _prepare(self, items: Sequence[tuple[str, str]]) -> list[Encoded]:
        """Tokenize every item once; contexts beyond the model's window are cut from the left."""
        tok, _ = self.model()
        bos = [tok.bos_token_id] if tok.bos_token_id is not None else [tok.eos_token_id]
        out = []
        limit = self.window()
        for context, text in items:
            ctx = tok(context, add_special_tokens=False)["input_ids"] if context else []
            sep = " " if context and text and not context.endswith((" ", "\n")) else ""
            enc = tok(sep + text, add_special_tokens=False, return_offsets_mapping=True)
            spans = tuple((max(0, a - len(sep)), max(0, b - len(sep))) for a, b in enc["offset_mapping"])
            if limit is not None and 1 + len(ctx) + len(spans) > limit:
                # The text is scored whole; what precedes it is cut from the left to fit the window,
                # as a sliding-window evaluation would (beyond the window the model cannot see it).
                room = limit - 1 - len(spans)
                if room < 0:
                    raise BackendError(f"{self.spec}: a text of {len(spans)} tokens does not fit the model's {limit} positions")
                if not self._cut_warned:  # once per backend: a run may cut thousands
                    log.warning(
                        "%s: contexts longer than the model's %d positions are cut from the left (first: %d of %d tokens kept)",
                        self.spec,
                        limit,
                        room,
                        len(ctx),
                    )
                    self._cut_warned = True
                ctx = ctx[len(ctx) - room :]
            out.append(Encoded(tuple(bos + ctx + enc["input_ids"]), 1 + len(ctx), spans))
        return out

    _runner_now = False  # this call runs on the shared-prefix runner (decided by `_plan`)

    def _plan(self, encoded: Sequence[Encoded]) -> list[list[int]]:
        self._runner_now = self.shared_prefix and self._prefixes_pay(encoded)
        self.took("shared-prefix runner" if self._runner_now else "padded rows, scored logits" if self.logits == "scored" else "padded rows, all logits")
        if not self._runner_now:
            return self.plan([len(e.ids) for e in encoded])
        # On the CPU plans of 8 budgets measured fastest; on a GPU a plan's key/value caches must
        # stay within one budget (8 of them held 60 GiB for a 12.6 GiB model on an H100).
        return self.prefix_plan([e.ids for e in encoded], (1 if cuda() else 8) * self.budget())

    def _prefixes_pay(self, encoded: Sequence[Encoded]) -> bool:
        """Whether this call's items share enough to run on the runner: when its plan skips
        `SHARED_MIN_SHARE` of the tokens. On unshared items padded rows were faster on an H100
        (6.5x) and on this project's AMD EPYC CPU (1.3x); on the builder's candidates the runner
        was 2x faster on that CPU."""
        if self.always_shared:
            return True
        from .shared_prefix import Request, saved_share

        return saved_share([Request(e.ids, e.start) for e in encoded], self.min_shared) >= SHARED_MIN_SHARE

    def _score(self, batch: Sequence[Encoded]) -> list[list[tuple[float, int, int]]]:
        return self.within_memory(batch, self._score_batch)

    def _score_batch(self, batch: Sequence[Encoded]) -> list[list[tuple[float, int, int]]]:
        if self._runner_now:
            from .shared_prefix import Request

            results = self.shared_runner(self.min_shared).run([Request(e.ids, e.start) for e in batch])
            return [list(zip(r.logprobs, (a for a, _ in e.spans), (b for _, b in e.spans))) for r, e in zip(results, batch)]
        return self._score_padded(batch)

    def _score_padded(self, encoded: Sequence[Encoded]) -> list[list[tuple[float, int, int]]]:
        import torch

        tok, model = self.model()
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        width = -(-max(len(e.ids) for e in encoded) // PAD_MULTIPLE) * PAD_MULTIPLE
        left = self.logits == "scored"
        rows, masks = [], []
        for e in encoded:
            fill = [pad] * (width - len(e.ids))
            rows.append(fill + list(e.ids) if left else list(e.ids) + fill)
            masks.append([0] * len(fill) + [1] * len(e.ids) if left else [1] * len(e.ids) + [0] * len(fill))
        ids_t = torch.tensor(rows, device=model.device)
        mask_t = torch.tensor(masks, device=model.device)
        kwargs: dict[str, Any] = {"input_ids": ids_t, "attention_mask": mask_t, "use_cache": False}  # no key/value cache to hold
        if left:
            kwargs["position_ids"] = (mask_t.cumsum(-1) - 1).clamp(min=0)
            keep = max(len(e.ids) - e.start for e in encoded) + 1  # the text tokens, and the position before the first
            kwargs["logits_to_keep"] = keep
        logits = model(**kwargs).logits.float()
        logp = torch.log_softmax(logits[:, :-1], dim=-1)
        targets = ids_t[:, width - logits.shape[1] + 1 :]
        chosen = logp.gather(2, targets.unsqueeze(-1)).squeeze(-1)
        out = []
        for i, e in enumerate(encoded):
            n_text = len(e.ids) - e.start
            offset = width - logits.shape[1] + 1  # absolute position of chosen[:, 0]'s target
            first = (width - n_text if left else e.start) - offset
            out.append([(lp, a, b) for lp, (a, b) in zip(chosen[i, first : first + n_text].tolist(), e.spans)])
        return out


class HFSeq2SeqEntailment(HFBackend, Entailment):
    """`hf-seq2seq:<id>[@dtype]`: TRUE-style models (e.g. google/t5_xxl_true_nli_mixture) read
    `premise: … hypothesis: …` and answer "1" or "0"; P(entail) = softmax over those two
    tokens at the first decoding step."""

    kind, prefix = "seq2seq", "hf-seq2seq"

    @staticmethod
    def _text(pair: tuple[str, str]) -> str:
        return f"premise: {pair[0]} hypothesis: {pair[1]}"

    def _plan(self, pairs: Sequence[tuple[str, str]]) -> list[list[int]]:
        tok, _ = self.model()
        return self.plan([len(ids) for ids in tok([self._text(p) for p in pairs], truncation=True)["input_ids"]])

    def _entail(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return self.within_memory(pairs, self._entail_batch)

    def _entail_batch(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        import torch

        tok, model = self.model()
        yes, no = (tok(t, add_special_tokens=False)["input_ids"][-1] for t in ("1", "0"))
        enc = tok([self._text(p) for p in pairs], return_tensors="pt", padding=True, truncation=True, pad_to_multiple_of=PAD_MULTIPLE).to(model.device)
        start = torch.full((len(pairs), 1), model.config.decoder_start_token_id, device=model.device)
        logits = model(**enc, decoder_input_ids=start, use_cache=False).logits[:, 0, :].float()
        two = torch.softmax(logits[:, [yes, no]], dim=-1)
        return list(two[:, 0].tolist())


def nli_label_indices(id2label: dict[int, str]) -> dict[str, int]:
    """Map entailment/neutral/contradiction to class indices by NAME, never by position.

    >>> sorted(nli_label_indices({0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}).items())
    [('contradiction', 0), ('entailment', 2), ('neutral', 1)]
    """
    found: dict[str, int] = {}
    for idx, name in id2label.items():
        low = name.lower()
        for key in ("entailment", "neutral", "contradiction"):
            if low.startswith(key[:6]):
                found[key] = int(idx)
    if "entailment" not in found:
        raise ValueError(f"no entailment label in id2label={id2label}")
    return found


class HFNLIEntailment(HFBackend, Entailment):
    """`hf-nli:<id>[@dtype]`: MNLI-style sequence classifiers over (premise, hypothesis)."""

    kind, prefix = "classifier", "hf-nli"

    def _plan(self, pairs: Sequence[tuple[str, str]]) -> list[list[int]]:
        tok, _ = self.model()
        enc = tok([p for p, _ in pairs], [h for _, h in pairs], truncation=True)
        return self.plan([len(ids) for ids in enc["input_ids"]])

    def _softmax(self, pairs: Sequence[tuple[str, str]]) -> tuple[list[list[float]], dict[str, int]]:
        idx = nli_label_indices(self.model()[1].config.id2label)
        return self.within_memory(pairs, self._softmax_batch), idx

    def _softmax_batch(self, pairs: Sequence[tuple[str, str]]) -> list[list[float]]:
        import torch

        tok, model = self.model()
        enc = tok([p for p, _ in pairs], [h for _, h in pairs], return_tensors="pt", padding=True, truncation=True, pad_to_multiple_of=PAD_MULTIPLE).to(
            model.device
        )
        return list(torch.softmax(model(**enc).logits.float(), dim=-1).tolist())

    @property
    def three_way(self) -> bool:  # type: ignore[override]
        return len(nli_label_indices(self.model()[1].config.id2label)) == 3

    def _entail(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        probs, idx = self._softmax(pairs)
        return [row[idx["entailment"]] for row in probs]

    def _entail3(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[float, float, float]]:
        probs, idx = self._softmax(pairs)
        if len(idx) < 3:
            raise TypeError(f"{self.spec} has no neutral/contradiction classes: {idx}")
        return [(float(r[idx["entailment"]]), float(r[idx["neutral"]]), float(r[idx["contradiction"]])) for r in probs]
