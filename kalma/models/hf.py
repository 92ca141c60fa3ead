"""Hugging Face transformers backends: causal LMs (chat + scoring), TRUE-style seq2seq
entailment, and MNLI-style classifiers, from a hub id or a local path.

How they use the hardware (the same for every backend here):
- **dtype**: bf16 on CUDA, fp32 on the CPU, unless the spec asks (`hf:ID@fp32`, `@bf16`,
  `@fp16`). A non-fp32 dtype is part of the backend's spec, so its results never share cache
  entries or provenance with fp32 ones. fp32 on CUDA runs its matmuls in TF32.
- **loading**: on CUDA, straight to the GPU(s) with `device_map="auto"` (a model larger than
  one GPU is split across them), never assembled in host memory first.
- **batches**: items are sorted by token length and cut into batches of at most
  `token_budget` padded tokens (padding to a multiple of 8), so short items are not padded to
  long ones. The budget comes from the device's free memory, or `token_budget=` /
  KALMA_TOKEN_BUDGET.
- **LM scoring**: sequences are left-padded, so every scored token sits at the end of its row,
  and logits are computed only for those last positions (`logits_to_keep`), not for the
  knowledge context before them.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import BackendError
from ..seeds import item_seed
from .base import LLM, Entailment, Generation, GenParams, LMScorer, Message, TokenLogprob

log = logging.getLogger(__name__)

DTYPES = ("fp32", "bf16", "fp16")
PAD_MULTIPLE = 8


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


def resolve_dtype(requested: str | None) -> str:
    """The dtype to run in: as asked, else bf16 on CUDA and fp32 on the CPU."""
    from ..errors import ConfigError

    if requested is not None and requested not in DTYPES:
        raise ConfigError(f"dtype {requested!r}: one of {', '.join(DTYPES)}")
    return requested or ("bf16" if cuda() else "fp32")


@functools.lru_cache(maxsize=4)
def load(kind: str, path: str, dtype: str, identity: str | None = None) -> tuple[Any, Any]:
    """(tokenizer, model) of `kind` (causal, seq2seq, classifier), loaded once per process and
    `identity` (a local folder's content): weights written over the folder load again."""
    import torch
    import transformers

    auto = {
        "causal": transformers.AutoModelForCausalLM,
        "seq2seq": transformers.AutoModelForSeq2SeqLM,
        "classifier": transformers.AutoModelForSequenceClassification,
    }[kind]
    kwargs: dict[str, Any] = {"dtype": {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]}
    if cuda():
        kwargs["device_map"] = "auto"  # weights go straight to the GPU(s), split when one is not enough
        if dtype == "fp32":
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
    with loading(path):
        tok = transformers.AutoTokenizer.from_pretrained(path)
        model = auto.from_pretrained(path, **kwargs).eval()
    if kind == "causal" and tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok, model


def default_token_budget(model: Any) -> int:
    """Padded tokens per batch: KALMA_TOKEN_BUDGET, else from the device. On CUDA a share of
    the free memory over what one token costs (activations across the layers, plus a row of
    logits). On the CPU 1,024: a forward pass there is compute-bound (SmolLM2: 520 tokens/s for
    one 400-token row, 601 for eight), so batches only pay while they stay small and even."""
    if os.environ.get("KALMA_TOKEN_BUDGET"):
        return max(PAD_MULTIPLE, int(os.environ["KALMA_TOKEN_BUDGET"]))
    if not cuda():
        return 1024
    import torch

    cfg = model.config
    hidden: int = getattr(cfg, "hidden_size", None) or getattr(cfg, "d_model", None) or 1024
    layers: int = getattr(cfg, "num_hidden_layers", None) or getattr(cfg, "num_layers", None) or 24
    vocab: int = getattr(cfg, "vocab_size", None) or 32000
    per_token = hidden * layers * 2 * 12 + vocab * 4  # activations (bf16, ~12 tensors a layer) + fp32 logits
    free, _ = torch.cuda.mem_get_info()
    return int(min(max(free * 0.4 / per_token, 512), 1 << 18))


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
    """What every transformers backend shares: model reference, dtype, batching policy."""

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
    ):
        path, suffix = split_dtype(ref)
        self.path = model_ref(path)
        hub_ready(self.path)  # at construction: before any work or progress bar
        self.dtype = resolve_dtype(dtype or suffix)
        # fp32 is the implicit identity; any other dtype is named, so results never mix
        self.spec = (spec or f"{self.prefix}:{path}") + ("" if self.dtype == "fp32" else f"@{self.dtype}")
        self.token_budget, self.batching, self.batch_size = token_budget, batching, batch_size

    _identity: str | None = None  # as of the last public call: what `model()` loads, without re-reading the folder per batch

    def model(self) -> tuple[Any, Any]:
        return load(self.kind, self.path, self.dtype, self._identity or self.cache_identity())

    def cache_identity(self) -> str | None:
        """The spec, and for a local folder its content: a checkpoint written over the same folder
        is another model, never answered from the cache of the one before. Asked once per public
        call (answering, scoring, judging), not per batch."""
        self._identity = self.spec
        if os.path.isdir(os.path.expanduser(self.path)):
            from ..resume import path_digest

            self._identity = f"{self.spec}|{path_digest(os.path.expanduser(self.path))}"
        return self._identity

    def window(self) -> int | None:
        """How many positions the model attends over; None when its config sets no limit (T5)."""
        cfg = self.model()[1].config
        n = getattr(cfg, "max_position_embeddings", None) or getattr(cfg, "n_positions", None)
        return int(n) if n else None

    def budget(self) -> int:
        """Padded tokens per forward pass (the policy above)."""
        return self.token_budget or default_token_budget(self.model()[1])

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

    def _prepare(self, chats: Sequence[list[Message]]) -> list[Prompt]:
        tok, _ = self.model()
        return [Prompt(list(c), tuple(tok(render_chat(tok, c), add_special_tokens=False)["input_ids"])) for c in chats]

    def _plan(self, prompts: Sequence[Prompt]) -> list[list[int]]:
        if self.batching == "items":
            return self.plan([len(p.ids) for p in prompts])
        return self.prefix_plan([p.ids for p in prompts], self.budget() * self.budget_factor)

    def _generate(self, batch: Sequence[Prompt], params: GenParams) -> list[Generation]:
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
        if params.temperature == 0 and self.batching == "tokens":
            from .shared_prefix import Request

            requests = [Request(p.ids, len(p.ids), top=params.logprobs, decode=params.max_tokens, stop=tuple(stops)) for p in batch]
            steps = [[(s.token, s.logprob, dict(s.top)) for s in r.generated] for r in self.shared_runner().run(requests)]
        else:
            width = -(-longest // PAD_MULTIPLE) * PAD_MULTIPLE
            fill = tok.pad_token_id if tok.pad_token_id is not None else 0
            enc = {
                "input_ids": torch.tensor([[fill] * (width - len(p.ids)) + list(p.ids) for p in batch], device=model.device),
                "attention_mask": torch.tensor([[0] * (width - len(p.ids)) + [1] * len(p.ids) for p in batch], device=model.device),
            }
            with torch.no_grad():
                if params.temperature > 0:
                    # Each row samples from its own generator, seeded by the run seed and the chat itself:
                    # an answer never depends on what else shares its batch.
                    seeds = [item_seed(params.seed, p.chat) if params.seed is not None else int(torch.randint(0, 1 << 31, ()).item()) for p in batch]
                    new, scores = _sample(model, enc, params, seeds, tok.eos_token_id, tok.pad_token_id)
                else:
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
      one paragraph, texts under the same knowledge) run it once (`kalma.models.shared_prefix`);
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
        logits: Literal["scored", "all"] = "scored",
        shared_prefix: bool = True,
        min_shared: int = 64,
    ):
        super().__init__(ref, spec, dtype=dtype, token_budget=token_budget, batching=batching, batch_size=batch_size)
        self.logits = logits
        self.shared_prefix = shared_prefix and logits == "scored" and batching == "tokens"
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

    def _plan(self, encoded: Sequence[Encoded]) -> list[list[int]]:
        if not self.shared_prefix:
            return self.plan([len(e.ids) for e in encoded])
        return self.prefix_plan([e.ids for e in encoded], 8 * self.budget())

    def _score(self, batch: Sequence[Encoded]) -> list[list[tuple[float, int, int]]]:
        if self.shared_prefix:
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
        kwargs: dict[str, Any] = {"input_ids": ids_t, "attention_mask": mask_t}
        if left:
            kwargs["position_ids"] = (mask_t.cumsum(-1) - 1).clamp(min=0)
            keep = max(len(e.ids) - e.start for e in encoded) + 1  # the text tokens, and the position before the first
            kwargs["logits_to_keep"] = keep
        with torch.no_grad():
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
        import torch

        tok, model = self.model()
        yes, no = (tok(t, add_special_tokens=False)["input_ids"][-1] for t in ("1", "0"))
        enc = tok([self._text(p) for p in pairs], return_tensors="pt", padding=True, truncation=True, pad_to_multiple_of=PAD_MULTIPLE).to(model.device)
        start = torch.full((len(pairs), 1), model.config.decoder_start_token_id, device=model.device)
        with torch.no_grad():
            logits = model(**enc, decoder_input_ids=start).logits[:, 0, :].float()
        two = torch.softmax(logits[:, [yes, no]], dim=-1)
        return two[:, 0].tolist()


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

    def _softmax(self, pairs: Sequence[tuple[str, str]]) -> tuple[Any, dict[str, int]]:
        import torch

        tok, model = self.model()
        idx = nli_label_indices(model.config.id2label)
        enc = tok([p for p, _ in pairs], [h for _, h in pairs], return_tensors="pt", padding=True, truncation=True, pad_to_multiple_of=PAD_MULTIPLE).to(
            model.device
        )
        with torch.no_grad():
            return torch.softmax(model(**enc).logits.float(), dim=-1), idx

    @property
    def three_way(self) -> bool:  # type: ignore[override]
        return len(nli_label_indices(self.model()[1].config.id2label)) == 3

    def _entail(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        probs, idx = self._softmax(pairs)
        return probs[:, idx["entailment"]].tolist()

    def _entail3(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[float, float, float]]:
        probs, idx = self._softmax(pairs)
        if len(idx) < 3:
            raise TypeError(f"{self.spec} has no neutral/contradiction classes: {idx}")
        return [(float(r[idx["entailment"]]), float(r[idx["neutral"]]), float(r[idx["contradiction"]])) for r in probs]
