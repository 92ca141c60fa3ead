"""Hugging Face transformers backends: causal LMs (chat + scoring), TRUE-style seq2seq
entailment, MNLI-style classifiers and text classifiers, from a hub id or a local path.

Every device decision (device, dtype, TF32, attention, the byte budget of a batch) is the
backend's `Runtime` (`kalma.models.runtime`), resolved once its model loads (`kalma.models.loading`);
every batch is planned by what `MemoryModel` (`kalma.models.memory`) predicts it holds:
- **batches** are items sorted by length and grouped while the prediction stays within the
  budget: activations at the batch's real widths, the logits it scores, the key/value cache
  (generation's, and the runner's copied prefixes) and the log-probs kept; passes that compute
  many positions at once are also cut at the runtime's pass width (on the CPU, the measured knee
  of its throughput), decoding is not. A batch that still runs out of GPU memory is split in two
  (once the failed attempt's tensors are freed), the budget halved for the rest of the run (said
  once), the allocator's cache freed and the rest of the call planned again.
- **per call**: the path a call takes (padded rows or the runner, how it decodes) is decided once,
  when its items are prepared, and travels with them: a re-plan after running out of memory
  keeps it.
- **LM scoring**: sequences are left-padded, so every scored token sits at the end of its row,
  and logits are computed only for those last positions (`logits_to_keep`); no key/value cache
  is kept. Shared prefixes run once where the call's plan saves a real share of the tokens
  (`SHARED_MIN_SHARE`), on any device.
- **generation**: greedy decoding on the shared-prefix runner on the CPU and where prompts share
  much; otherwise, on CUDA, transformers' `generate()` with a static key/value cache, one call a
  batch in a few shapes (rows a power of two, widths bucketed) so that the graphs it compiles are
  reused. Log-probabilities are computed on the device at each step and moved once per batch.
"""

from __future__ import annotations

import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..errors import BackendError
from ..progress import stop_point
from ..seeds import item_seed
from .base import LLM, Entailment, Generation, GenParams, LMScorer, Matcher, Message, TokenLogprob, separator
from .loading import hub_ready, load, model_ref, model_type, split_dtype
from .runtime import PAD_MULTIPLE, Runtime, device, padded, plan_batches, prefix_plan, resolve, resolve_attention, resolve_dtype

log = logging.getLogger(__name__)

# The shared-prefix runner pays only when the plan skips this share of the tokens: it runs a pass
# per node, where padded rows run one (on unshared items an H100 measured it 6.5x slower).
SHARED_MIN_SHARE = 0.25
# Decoding asks the device whether every row has stopped once this many steps on a GPU (each
# question waits for the device); every step on the CPU, where it costs nothing.
SYNC_EVERY = 8


class HFBackend:
    """What every transformers backend shares: model reference, dtype, attention, batching, and
    the runtime it all resolves to (`rt`)."""

    kind = "causal"
    prefix = "hf"

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
        offload: bool = False,
        pass_tokens: int | None = None,
        fixed_rows: int | None = None,
    ):
        path, suffix = split_dtype(ref)
        self.path = model_ref(path)
        hub_ready(self.path)  # at construction: before any work or progress bar
        self.dtype = resolve_dtype(dtype or suffix)
        # fp32 is the implicit identity; any other dtype is named, so results never mix
        self.spec = (spec or f"{self.prefix}:{path}") + ("" if self.dtype == "fp32" else f"@{self.dtype}")
        self.token_budget, self.batching, self.batch_size, self.offload = token_budget, batching, batch_size, offload
        self.pass_tokens = pass_tokens
        # the policy's paths with this many rows a batch, whatever memory and the pass width say:
        # the fixed settings the policy benchmark measures the default against
        self.fixed_rows = fixed_rows
        self.attention = resolve_attention(self.kind, lambda: model_type(self.path), attention)
        self._runtime: Runtime | None = None

    _identity: str | None = None  # as of the last public call: what `model()` loads, without re-reading the folder per batch

    def model(self) -> tuple[Any, Any]:
        """The tokenizer and the model, loaded once per process where the device says. Loading
        decides nothing else: the runtime is resolved apart (`rt`)."""
        tok, model, _ = self._loaded()
        return tok, model

    def _loaded(self) -> tuple[Any, Any, str]:
        # Keyed by the weights, not the spec: `smollm2` and `hf:` naming its converted folder share
        # one model in memory, loaded once.
        found = load(self.kind, self.path, self.dtype, self._folder_digest(), self.attention, self.offload)
        stop_point()  # a run cancelled while the model loaded stops here, before calibrating or decoding
        return found

    def _folder_digest(self) -> str | None:
        """A local folder's content digest, as the last public call read it (`cache_identity`); None for a hub id."""
        if not os.path.isdir(os.path.expanduser(self.path)):
            return None
        return (self._identity or self.cache_identity() or "").rsplit("|", 1)[-1]

    def resolve_runtime(self) -> Runtime:
        """Resolving the backend, in its steps: the model loaded; the runtime resolved from its
        config (device, dtype, attention, budget); and on the CPU, unless the spec or the
        environment gives it, the pass width calibrated on the loaded model (measured once per
        machine and model, `calibration`)."""
        _, model, placement = self._loaded()
        rt = resolve(model.config, self.dtype, self.attention, self.token_budget, self.pass_tokens)
        rt.placement = placement
        if not rt.cuda and rt.pass_tokens is None and self.batching == "tokens" and self.fixed_rows is None:
            from .calibration import pass_tokens

            with rt.numerics():
                rt.pass_tokens, rt.pass_from = pass_tokens(self.kind, rt.memory.shape, self.dtype, lambda rows, width: self._probe(model, rows, width))
        return rt

    def _probe(self, model: Any, rows: int, width: int) -> None:
        """One pass of `rows` x `width` random positions, as this backend's passes run (for the
        CPU's calibration)."""
        import torch

        ids = torch.randint(0, min(1000, int(model.config.vocab_size)), (rows, width), device=model.device)
        if self.kind == "seq2seq":
            model(input_ids=ids, decoder_input_ids=ids[:, :1], use_cache=False)
        elif self.kind == "causal":
            model(input_ids=ids, use_cache=False, logits_to_keep=1)
        else:
            model(input_ids=ids)

    @property
    def rt(self) -> Runtime:
        """The resolved runtime (`resolve_runtime`, once)."""
        if self._runtime is None:
            self._runtime = self.resolve_runtime()
        return self._runtime

    def cache_identity(self) -> str | None:
        """The spec, and for a local folder its content: a checkpoint written over the same folder
        is another model, never answered from the cache of the one before. A GPU's results are
        keyed apart from the CPU's (other kernels, other rounding). Asked once per public call
        (answering, scoring, judging), not per batch."""
        self._identity = self.spec + ("|cuda" if device().available() else "") + (f"|{self.attention}" if self.attention else "")
        if os.path.isdir(os.path.expanduser(self.path)):
            from ..resume import path_digest

            self._identity = f"{self._identity}|{path_digest(os.path.expanduser(self.path))}"
        return self._identity

    def runs_as(self) -> str:
        """How this backend runs, as every report names it: `@bf16 on NVIDIA H100 80GB HBM3`."""
        return self.rt.runs_as()

    def weights(self) -> str | None:
        """Which weights ran, for reports: the hub revision (commit) the model was loaded at, else a
        local folder's content digest; None before the model is loaded."""
        if self._runtime is None:
            return None
        _, model, _ = self._loaded()
        revision = getattr(model.config, "_commit_hash", None)
        if revision:
            return f"revision {revision}"
        digest = self._folder_digest()
        return f"folder digest {digest}" if digest else None

    def runtime(self) -> dict[str, Any]:
        """Every device decision, resolved: for provenance, reports and benchmark rows (a backend
        whose model never loaded says only what it would run as)."""
        if self._runtime is None:
            return {"spec": self.spec, "dtype": self.dtype, "device": device().name(), "loaded": False}
        return {"spec": self.spec, **self._runtime.as_dict()}

    def replan(self) -> bool:
        """Whether the budget shrank since this call was planned (once: the caller re-plans)."""
        if self._runtime is None or not self._runtime.replan:
            return False
        self._runtime.replan = False
        return True

    def within_memory(
        self,
        batch: Sequence[Any],
        run: Callable[[Sequence[Any]], list[Any]],
        predicted: int = 0,
        split: Callable[[Sequence[Any]], list[list[int]]] | None = None,
    ) -> list[Any]:
        """`run(batch)`. When it runs out of GPU memory: the allocator's cache freed, the budget
        halved for the rest of the run (said once), and the batch run again in the parts `split`
        plans for it at the halved budget (by default its two halves), each the same way. On CUDA
        the first batch's measured peak corrects the memory model (`predicted`: what it said)."""
        rt = self.rt
        try:
            with device().batch() as used, rt.numerics():
                out = run(batch)
        except Exception as exc:
            if not rt.cuda or not device().is_oom(exc):
                raise
            if len(batch) < 2:
                raise BackendError(f"{self.spec}: one item does not fit in GPU memory ({rt.device}); {rt.notes[-1] if rt.notes else ''}") from None
            out = None
        if out is None:
            # Out of the except block: the error's traceback, and with it every tensor of the failed
            # attempt, is gone before the cache is emptied and the parts run.
            first = not rt.notes
            device().empty_cache()
            rt.halve(len(batch))
            if first:
                log.warning("%s: %s", self.spec, rt.notes[-1])
            return self._in_parts(batch, run, split)
        if rt.cuda and predicted > 0 and not rt.measured:
            rt.calibrate(predicted, used.peak)
        return out

    def _in_parts(self, batch: Sequence[Any], run: Callable[[Sequence[Any]], list[Any]], split: Callable[[Sequence[Any]], list[list[int]]] | None) -> list[Any]:
        """`batch` run in the parts `split` plans at the budget of the moment (else halves); when a
        part runs out of memory too, the parts after it are planned again at the budget it left."""

        def parts(of: list[int]) -> list[list[int]]:
            found = split([batch[i] for i in of]) if split else []
            found = [[of[j] for j in g] for g in found] if len(found) >= 2 else [of[: len(of) // 2], of[len(of) // 2 :]]
            return [p for p in found if p]

        queue, done = parts(list(range(len(batch)))), dict[int, Any]()
        while queue:
            part, cap = queue.pop(0), self.rt.cap
            done.update(zip(part, self.within_memory([batch[i] for i in part], run, split=split)))
            if self.rt.cap != cap and queue:
                queue = parts([i for p in queue for i in p])
        return [done[i] for i in range(len(batch))]

    def window(self) -> int | None:
        """How many positions the model attends over; None when its config sets no limit (T5)."""
        cfg = self.model()[1].config
        n = getattr(cfg, "max_position_embeddings", None) or getattr(cfg, "n_positions", None)
        return int(n) if n else None

    def plan(self, sizes: Sequence[tuple[int, ...]], cost: Callable[..., int], wide: bool = True) -> list[list[int]]:
        """Batches within the budget by `cost(rows, *widest)` (sorted) and, for a pass over every
        position of its rows (`wide`), within the pass width; or `batching="items"`: fixed-size
        batches in input order; or `fixed_rows` a batch."""
        if self.batching == "items":
            return [list(range(i, min(i + self.batch_size, len(sizes)))) for i in range(0, len(sizes), self.batch_size)]
        if self.fixed_rows is not None:
            return plan_batches(sizes, cost, budget=1 << 62, max_rows=self.fixed_rows)
        return plan_batches(sizes, cost, self.rt.budget(), pass_tokens=self.rt.pass_tokens if wide else None)

    def prefix_plan(self, seqs: Sequence[tuple[int, ...]], decode: bool = False) -> list[list[int]]:
        """Batches for the shared-prefix runner (`runtime.prefix_plan`) at this backend's budget."""
        memory, budget = self.rt.memory, self.rt.budget() if self.fixed_rows is None else 1 << 62
        return prefix_plan(seqs, lambda tokens: memory.kv(1, tokens), budget, self.fixed_rows or len(seqs), decode)

    def shared_runner(self, min_saved: int = 64) -> Any:
        """This backend's shared-prefix runner (`kalma.models.shared_prefix`), made once: it
        remembers recent contexts from one call to the next, and plans by this backend's budget."""
        from .shared_prefix import SharedPrefixRunner

        if getattr(self, "_runner", None) is None:
            tok, model = self.model()
            rt = self.rt
            budget = rt.budget if self.fixed_rows is None else lambda: 1 << 62
            self._runner = SharedPrefixRunner(
                model,
                pad_id=pad_id(tok),
                memory=rt.memory,
                budget=budget,
                min_saved=min_saved,
                pass_tokens=rt.pass_tokens if self.fixed_rows is None else None,
                max_rows=self.fixed_rows or 1024,
                sync_every=SYNC_EVERY if rt.cuda else 1,
            )
        return self._runner


def pad_id(tok: Any) -> int:
    """The id padding is written with: the tokenizer's pad token, else 0 (masked either way)."""
    return int(tok.pad_token_id) if tok.pad_token_id is not None else 0


def render_chat(tok: Any, messages: list[Message]) -> str:
    """The model's own chat template when it has one, else a plain transcript."""
    if getattr(tok, "chat_template", None):
        return str(tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))
    lines = [f"{m['role'].capitalize()}: {m['content']}" for m in messages]
    return "\n".join(lines) + "\nAssistant:"


@dataclass(frozen=True)
class Prompt:
    """One chat as the model reads it: its messages (for the per-item seed), its token ids, and
    how the call it belongs to decodes (`HFCausalLM.decoding`)."""

    chat: list[Message] = field(compare=False)
    ids: tuple[int, ...]
    how: str = field(default="runner", compare=False)


def bucket(n: int) -> int:
    """`n` rounded up to one of a few widths (64, 96, 128, 192, 256, …: steps of at most 1.5x),
    so that static-cache generation compiles few shapes and reuses them.

    >>> [bucket(n) for n in (1, 64, 65, 100, 129, 700)]
    [64, 64, 96, 128, 192, 768]
    """
    size = 64
    while size < n:
        size = size * 3 // 2 if size & (size - 1) == 0 else size * 4 // 3
    return size


def row_bucket(n: int) -> int:
    """`n` rows rounded up to a power of two: static-cache generation pads a batch's rows up to
    it, one `generate()` call a batch in few shapes.

    >>> [row_bucket(n) for n in (1, 2, 3, 8, 13)]
    [1, 2, 4, 8, 16]
    """
    return 1 << (max(n, 1) - 1).bit_length()


class HFCausalLM(HFBackend, LLM):
    """`hf:<hub id or path>[@dtype]`: batched generation. Greedy decoding runs on the
    shared-prefix runner: prompts sharing a prefix (the baseline's instruction and
    demonstration, a judge's answer under four criteria) run it once, then decode together.
    On CUDA, prompts that share little decode with `generate()` and a static cache. Sampling
    decodes left-padded rows, each with its own seeded generator. `batching="items"` keeps
    transformers' generate(), one fixed batch at a time: the reference the tests compare against."""

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
        offload: bool = False,
        pass_tokens: int | None = None,
        fixed_rows: int | None = None,
        decode: Literal["auto", "runner", "static"] = "auto",
    ):
        super().__init__(
            ref,
            spec,
            dtype=dtype,
            token_budget=token_budget,
            batching=batching,
            batch_size=batch_size,
            attention=attention,
            offload=offload,
            pass_tokens=pass_tokens,
            fixed_rows=fixed_rows,
        )
        self.decode = decode  # greedy decoding: the policy (auto), or one path for benchmarks and tests

    def _prepare(self, chats: Sequence[list[Message]], params: GenParams) -> list[Prompt]:
        """The chats' token ids, and how this call decodes them: decided once, over all of them."""
        tok, _ = self.model()
        encoded = _tokenize(tok, [render_chat(tok, c) for c in chats])  # one tokenizer call for the whole call
        prompts = [Prompt(list(c), tuple(ids)) for c, (ids, _) in zip(chats, encoded)]
        how = self.decoding(prompts, params)
        return [Prompt(p.chat, p.ids, how) for p in prompts]

    def decoding(self, prompts: Sequence[Prompt], params: GenParams) -> str:
        """How this call decodes: `runner`, `static` (generate() with a static cache), `sampling`
        or `generate` (transformers' own loop, the reference)."""
        if self.batching == "items":
            return "generate" if params.temperature == 0 else "sampling"
        if params.temperature > 0:
            return "sampling"
        from .shared_prefix import Request, saved_share

        # a GPU decodes faster with transformers' static cache than on the runner, unless the
        # prompts share much (G-Eval's criteria under one answer): then the runner's prefixes pay
        if self.decode == "auto":
            shares = saved_share([Request(p.ids, len(p.ids)) for p in prompts], 64)
            return "static" if device().available() and shares < SHARED_MIN_SHARE else "runner"
        return self.decode

    def _plan(self, prompts: Sequence[Prompt], params: GenParams) -> list[list[int]]:
        """Batches by memory alone (a decoding step is one position a row: every row held pays);
        the prompts' passes are cut to the pass width inside (the runner's leaves, sampling's
        prefill). Static-cache batches are planned at their rows padded up (`row_bucket`), so that
        all but the last have a power of two."""
        how = prompts[0].how if prompts else "runner"
        if how == "runner":
            return self.prefix_plan([p.ids for p in prompts], decode=True)
        memory, new, top = self.rt.memory, params.max_tokens, params.logprobs
        if how != "static":
            return self.plan([(padded(len(p.ids)),) for p in prompts], lambda rows, width: memory.generation(rows, width, new, top), wide=False)
        return self.plan([(bucket(len(p.ids)),) for p in prompts], lambda rows, width: memory.generation(row_bucket(rows), width, new, top), wide=False)

    def _generate(self, batch: Sequence[Prompt], params: GenParams) -> list[Generation]:
        how = batch[0].how
        width = bucket(max(len(p.ids) for p in batch)) if how == "static" else padded(max(len(p.ids) for p in batch))
        rows = row_bucket(len(batch)) if how == "static" else len(batch)
        predicted = self.rt.memory.generation(rows, width, params.max_tokens, params.logprobs) if how != "runner" else 0
        return self.within_memory(batch, lambda b: self._decode(b, params, how), predicted, lambda b: self._plan(b, params))

    def _decode(self, batch: Sequence[Prompt], params: GenParams, how: str) -> list[Generation]:
        tok, model = self.model()
        limit, longest = self.window(), max(len(p.ids) for p in batch)
        if limit is not None and longest + params.max_tokens > limit:  # cutting a prompt would drop its instructions
            raise BackendError(
                f"{self.spec}: a prompt of {longest} tokens plus {params.max_tokens} to generate exceeds the model's {limit} positions; "
                "give it less knowledge or use a longer-context model"
            )
        stops = {t for t in (tok.eos_token_id, tok.pad_token_id) if t is not None}
        steps: list[list[tuple[int, float, dict[int, float]]]]  # per prompt: (token, log-prob, top alternatives)
        if how == "runner":
            from .shared_prefix import Request

            self.rt.took("greedy: shared-prefix runner")
            requests = [Request(p.ids, len(p.ids), top=params.logprobs, decode=params.max_tokens, stop=tuple(stops)) for p in batch]
            steps = [[(s.token, s.logprob, dict(s.top)) for s in r.generated] for r in self.shared_runner().run(requests)]
        else:
            width = bucket(longest) if how == "static" else padded(longest)
            if how == "static" and limit is not None:
                width = min(width, limit - params.max_tokens)
            rows = list(batch) + [batch[-1]] * (row_bucket(len(batch)) - len(batch)) if how == "static" else list(batch)
            enc = _left_padded(rows, width, pad_id(tok), model.device)
            if how == "sampling":
                # Each row samples from its own generator, seeded by the run seed and the chat itself:
                # an answer never depends on what else shares its batch.
                self.rt.took("sampling: padded rows")
                import torch

                seeds = [item_seed(params.seed, p.chat) if params.seed is not None else int(torch.randint(0, 1 << 31, ()).item()) for p in batch]
                steps = _sample(model, enc, params, seeds, tok.eos_token_id, tok.pad_token_id, self.rt.pass_tokens)
            else:
                self.rt.took("greedy: generate() with a static cache" if how == "static" else "greedy: generate()")
                steps = _greedy(model, enc, params, tok.pad_token_id, static=how == "static")
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


def _left_padded(batch: Sequence[Prompt], width: int, fill: int, where: Any) -> dict[str, Any]:
    import torch

    return {
        "input_ids": torch.tensor([[fill] * (width - len(p.ids)) + list(p.ids) for p in batch], device=where),
        "attention_mask": torch.tensor([[0] * (width - len(p.ids)) + [1] * len(p.ids) for p in batch], device=where),
    }


def _greedy(model: Any, enc: dict[str, Any], params: GenParams, pad: int | None, static: bool) -> list[list[tuple[int, float, dict[int, float]]]]:
    """transformers' `generate()`, greedy, recording each step's log-probs on the device through a
    logits processor (the last one: it sees the scores the choice is made from) instead of
    keeping every step's scores over the whole vocabulary."""
    import torch
    from transformers import LogitsProcessor, LogitsProcessorList

    from .shared_prefix import StepLog

    steps = StepLog(params.logprobs, params.max_tokens)

    class Record(LogitsProcessor):
        def __call__(self, input_ids: Any, scores: Any) -> Any:
            logp = torch.log_softmax(scores.float(), dim=-1)
            steps.add(logp, logp.argmax(-1))
            return scores

    model.generate(
        **enc,
        max_new_tokens=params.max_tokens,
        do_sample=False,
        temperature=None,
        top_p=None,
        top_k=None,
        pad_token_id=pad,
        logits_processor=LogitsProcessorList([Record()]),
        **({"cache_implementation": "static"} if static else {}),
    )
    return steps.rows()


def _prefill(model: Any, ids: Any, mask: Any, positions: Any, pass_tokens: int | None) -> tuple[Any, Any]:
    """The prompts' pass over left-padded rows (shortest first), in parts of at most
    `pass_tokens` positions, each part only as wide as its own longest row; the parts' caches are
    left-padded back to the batch's width and joined for decoding. Returns (the last position's
    logits of every row, the cache)."""
    import torch

    from .shared_prefix import cache_arg, cache_of, merge_caches

    lengths = mask.sum(-1).tolist()
    width = ids.shape[1]
    parts: list[list[int]] = []
    for row, n in enumerate(lengths):  # planned batches arrive shortest first
        if parts and (pass_tokens is None or (len(parts[-1]) + 1) * max(n, *(lengths[r] for r in parts[-1])) <= pass_tokens):
            parts[-1].append(row)
        else:
            parts.append([row])
    if len(parts) == 1:
        out = model(input_ids=ids, attention_mask=mask, position_ids=positions, **cache_arg(model, None), use_cache=True, logits_to_keep=1)
        return out.logits[:, -1, :], cache_of(out)
    logits, caches = [], []
    for part in parts:
        rows = torch.tensor(part, device=ids.device)
        start = width - int(max(lengths[r] for r in part))
        out = model(
            input_ids=ids[rows, start:],
            attention_mask=mask[rows, start:],
            position_ids=positions[rows, start:],
            **cache_arg(model, None),
            use_cache=True,
            logits_to_keep=1,
        )
        logits.append(out.logits[:, -1, :])
        caches.append(cache_of(out))
    return torch.cat(logits), merge_caches(caches, width, left=True)


def _sample(
    model: Any, enc: Any, params: GenParams, seeds: Sequence[int], eos: int | None, pad: int | None, pass_tokens: int | None
) -> list[list[tuple[int, float, dict[int, float]]]]:
    """Sampled decoding of a left-padded batch, each row drawing from its own seeded generator;
    the prompts' pass runs in parts within `pass_tokens` (`_prefill`), decoding all together. Temperature and
    top-p are applied as transformers' warpers apply them, so the log-probs are the same; they
    stay on the device until the batch is done."""
    import torch

    from .shared_prefix import StepLog, cache_arg, cache_of

    rows = enc["input_ids"].shape[0]
    gens = [torch.Generator(device=model.device).manual_seed(s) for s in seeds]
    mask = enc["attention_mask"]
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    finished = torch.zeros(rows, dtype=torch.bool, device=model.device)
    fill = pad if pad is not None else (eos if eos is not None else 0)
    steps = StepLog(params.logprobs, params.max_tokens)
    last, past = _prefill(model, enc["input_ids"], mask, positions, pass_tokens)
    for n in range(params.max_tokens):
        logits = last.float() / params.temperature
        if params.top_p < 1.0:  # keep the smallest set of tokens whose probability reaches top_p
            ordered, order = torch.sort(logits, descending=False)
            drop = ordered.softmax(-1).cumsum(-1) <= 1 - params.top_p
            drop[:, -1] = False
            logits = logits.masked_fill(drop.scatter(1, order, drop), float("-inf"))
        probs = logits.softmax(-1)
        step = torch.stack([torch.multinomial(probs[i], 1, generator=gens[i])[0] for i in range(rows)])
        step = torch.where(finished, torch.full_like(step, fill), step)
        steps.add(torch.log_softmax(logits, dim=-1), step)
        finished |= (step == eos) if eos is not None else torch.zeros_like(finished)
        if n + 1 == params.max_tokens or bool(finished.all()):  # one wait a step, for the whole batch
            break
        mask = torch.cat([mask, torch.ones((rows, 1), dtype=mask.dtype, device=mask.device)], dim=-1)
        positions = positions[:, -1:] + 1
        out = model(input_ids=step[:, None], attention_mask=mask, position_ids=positions, **cache_arg(model, past), use_cache=True, logits_to_keep=1)
        past, last = cache_of(out), out.logits[:, -1, :]
    return steps.rows()


@dataclass(frozen=True)
class Encoded:
    """One (context, text) item as the scorer runs it: token ids with BOS, the index of the
    first text token, and the character span in `text` of each text token."""

    ids: tuple[int, ...]
    start: int
    spans: tuple[tuple[int, int], ...]
    runner: bool = False  # the call it belongs to runs on the shared-prefix runner (decided once, over all its items)


def _tokenize(tok: Any, texts: list[str]) -> list[tuple[list[int], list[tuple[int, int]]]]:
    """Token ids and character offsets of each text, no special tokens: one call to the Rust
    tokenizer for all of them (what `tok(texts)` does, less its per-item conversion in Python,
    a tenth of a build's time with a small scorer)."""
    if not texts:
        return []
    backend = getattr(tok, "backend_tokenizer", None)
    # A padded or truncating call elsewhere leaves its settings on the shared Rust tokenizer
    # until the tokenizer's next plain call resets them: then take the plain call.
    if backend is None or backend.padding is not None or backend.truncation is not None:
        found = tok(texts, add_special_tokens=False, return_offsets_mapping=True)
        return list(zip(found["input_ids"], found["offset_mapping"]))
    return [(e.ids, e.offsets) for e in backend.encode_batch(texts, add_special_tokens=False)]


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
        offload: bool = False,
        pass_tokens: int | None = None,
        fixed_rows: int | None = None,
        logits: Literal["scored", "all"] = "scored",
        shared_prefix: bool | Literal["always"] = True,
        min_shared: int = 64,
    ):
        super().__init__(
            ref,
            spec,
            dtype=dtype,
            token_budget=token_budget,
            batching=batching,
            batch_size=batch_size,
            attention=attention,
            offload=offload,
            pass_tokens=pass_tokens,
            fixed_rows=fixed_rows,
        )
        self.logits = logits
        self.shared_prefix = bool(shared_prefix) and logits == "scored" and batching == "tokens"
        self.always_shared = shared_prefix == "always"  # the runner whatever the policy says: for benchmarks
        self.min_shared = min_shared  # token positions a shared prefix must save to get a pass of its own
        self._cut_warned = False

    def _prepare(self, items: Sequence[tuple[str, str]]) -> list[Encoded]:
        """Tokenize every item once (contexts beyond the model's window are cut from the left), and
        decide once for the call whether it runs on the shared-prefix runner."""
        tok, _ = self.model()
        bos = [tok.bos_token_id] if tok.bos_token_id is not None else [tok.eos_token_id]
        out = []
        limit = self.window()
        # Two tokenizer calls for the whole call, each context once: the builder sends thousands
        # of candidates after a few dozen paragraphs, and a call per item cost more than the model.
        unique = list(dict.fromkeys(c for c, _ in items if c))
        known = dict(zip(unique, (ids for ids, _ in _tokenize(tok, unique))))
        seps = [separator(context, text) for context, text in items]
        for (context, _), sep, (ids, offsets) in zip(items, seps, _tokenize(tok, [sep + text for sep, (_, text) in zip(seps, items)])):
            ctx = known[context] if context else []
            spans = tuple((max(0, a - len(sep)), max(0, b - len(sep))) for a, b in offsets)
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
            out.append(Encoded(tuple(bos + ctx + ids), 1 + len(ctx), spans))
        runner = self.shared_prefix and self._prefixes_pay(out)
        self.rt.took("shared-prefix runner" if runner else "padded rows, scored logits" if self.logits == "scored" else "padded rows, all logits")
        return [replace(e, runner=runner) for e in out]

    def _sizes(self, encoded: Sequence[Encoded]) -> list[tuple[int, int]]:
        """(padded width, positions whose logits are computed) of each item."""
        return [(padded(len(e.ids)), padded(len(e.ids)) if self.logits == "all" else len(e.ids) - e.start + 1) for e in encoded]

    def _plan(self, encoded: Sequence[Encoded]) -> list[list[int]]:
        """The batches of the path this call takes, at the budget of the moment."""
        if encoded and encoded[0].runner:
            return self.prefix_plan([e.ids for e in encoded])
        return self.plan(self._sizes(encoded), self.rt.memory.forward)

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
        if batch[0].runner:
            return self.within_memory(batch, self._score_shared, split=self._plan)
        rows, widths = len(batch), self._sizes(batch)
        predicted = self.rt.memory.forward(rows, max(w for w, _ in widths), max(k for _, k in widths))
        return self.within_memory(batch, self._score_padded, predicted, self._plan)

    def _score_shared(self, batch: Sequence[Encoded]) -> list[list[tuple[float, int, int]]]:
        from .shared_prefix import Request

        results = self.shared_runner(self.min_shared).run([Request(e.ids, e.start) for e in batch])
        return [list(zip(r.logprobs, (a for a, _ in e.spans), (b for _, b in e.spans))) for r, e in zip(results, batch)]

    def _score_padded(self, encoded: Sequence[Encoded]) -> list[list[tuple[float, int, int]]]:
        import torch

        tok, model = self.model()
        pad = pad_id(tok)
        width = padded(max(len(e.ids) for e in encoded))
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
        chosen = logp.gather(2, targets.unsqueeze(-1)).squeeze(-1).tolist()  # one transfer for the batch
        out = []
        for i, e in enumerate(encoded):
            n_text = len(e.ids) - e.start
            offset = width - logits.shape[1] + 1  # absolute position of chosen[:, 0]'s target
            first = (width - n_text if left else e.start) - offset
            out.append([(lp, a, b) for lp, (a, b) in zip(chosen[i][first : first + n_text], e.spans)])
        return out


class _Classified(HFBackend, ABC):
    """Backends that read (premise, hypothesis) or texts in one pass of an encoder: batches by
    the predicted peak of that pass at their real widths."""

    def _widths(self, texts: Sequence[Any]) -> list[tuple[int]]:
        tok, _ = self.model()
        return [(padded(len(ids)),) for ids in self._encode(tok, texts)["input_ids"]]

    @abstractmethod
    def _encode(self, tok: Any, texts: Sequence[Any], **kwargs: Any) -> Any:
        """The tokenizer's encoding of `texts` as this backend reads them."""

    def _cost(self, rows: int, width: int) -> int:
        return self.rt.memory.forward(rows, width, 1)

    def _batch_plan(self, texts: Sequence[Any]) -> list[list[int]]:
        return self.plan(self._widths(texts), self._cost)

    def _plan(self, texts: Sequence[Any]) -> list[list[int]] | None:
        return self._batch_plan(texts)

    def _run(self, texts: Sequence[Any], each: Callable[[Sequence[Any]], list[Any]]) -> list[Any]:
        width = max(w for (w,) in self._widths(texts))
        return self.within_memory(texts, each, self._cost(len(texts), width), self._batch_plan)

    def _run_planned(self, texts: Sequence[Any], each: Callable[[Sequence[Any]], list[Any]]) -> list[Any]:
        """`each` over `texts` in the batches the planner makes of them, in input order: for a
        backend whose model inputs are not its calls' items (distinct texts, a pair's chunks)."""
        out: dict[int, Any] = {}
        for batch in self._batch_plan(texts):
            out.update(zip(batch, self._run([texts[i] for i in batch], each)))
        return [out[i] for i in range(len(texts))]


class HFSeq2SeqEntailment(_Classified, Entailment):
    """`hf-seq2seq:<id>[@dtype]`: TRUE-style models (e.g. google/t5_xxl_true_nli_mixture) read
    `premise: … hypothesis: …` and answer "1" or "0"; P(entail) = softmax over those two
    tokens at the first decoding step."""

    kind, prefix = "seq2seq", "hf-seq2seq"

    @staticmethod
    def _text(pair: tuple[str, str]) -> str:
        return f"premise: {pair[0]} hypothesis: {pair[1]}"

    def _encode(self, tok: Any, texts: Sequence[Any], **kwargs: Any) -> Any:
        return tok([self._text(p) for p in texts], truncation=True, **kwargs)

    def _cost(self, rows: int, width: int) -> int:
        return self.rt.memory.seq2seq(rows, width)

    def _entail(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return self._run(pairs, self._entail_batch)

    def _entail_batch(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        import torch

        tok, model = self.model()
        yes, no = (tok(t, add_special_tokens=False)["input_ids"][-1] for t in ("1", "0"))
        enc = self._encode(tok, pairs, return_tensors="pt", padding=True, pad_to_multiple_of=PAD_MULTIPLE).to(model.device)
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


class _Paired(_Classified):
    """Classifiers that read two texts as one sequence pair (premise and hypothesis, query and passage)."""

    def _encode(self, tok: Any, texts: Sequence[Any], **kwargs: Any) -> Any:
        return tok([p for p, _ in texts], [h for _, h in texts], truncation=True, **kwargs)


class HFNLIEntailment(_Paired, Entailment):
    """`hf-nli:<id>[@dtype]`: MNLI-style sequence classifiers over (premise, hypothesis)."""

    kind, prefix = "classifier", "hf-nli"

    def _softmax(self, pairs: Sequence[tuple[str, str]]) -> tuple[list[list[float]], dict[str, int]]:
        idx = nli_label_indices(self.model()[1].config.id2label)
        return self._run(pairs, self._softmax_batch), idx

    def _softmax_batch(self, pairs: Sequence[tuple[str, str]]) -> list[list[float]]:
        import torch

        tok, model = self.model()
        enc = self._encode(tok, pairs, return_tensors="pt", padding=True, pad_to_multiple_of=PAD_MULTIPLE).to(model.device)
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


class HFTextClassifier(_Classified, Matcher):
    """`hf-cls:<hub id or path>[@dtype]`: P(positive class) of a text from a sequence classifier,
    e.g. a discourse-coherence model for CONNER's paragraph coherence. The positive class is the
    label named "coherent" (or "positive"), else the last class."""

    kind, prefix = "classifier", "hf-cls"

    def _encode(self, tok: Any, texts: Sequence[Any], **kwargs: Any) -> Any:
        return tok([t for _, t in texts], truncation=True, **kwargs)

    def _match(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return self._run(pairs, self._match_batch)

    def _match_batch(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        import torch

        tok, model = self.model()
        labels = {int(i): n.lower() for i, n in model.config.id2label.items()}
        pos = next((i for i, n in labels.items() if n in {"coherent", "positive"}), max(labels))
        enc = self._encode(tok, pairs, return_tensors="pt", padding=True, pad_to_multiple_of=PAD_MULTIPLE).to(model.device)
        return list(torch.softmax(model(**enc).logits.float(), -1)[:, pos].tolist())


class HFCrossEncoder(_Paired, Matcher):
    """`cross-encoder:<hub id or path>[@dtype]`: a (query, passage) re-ranker for CONNER's
    relevance (CONNER used Nogueira et al.'s BERT re-ranker): the sigmoid of its one logit, or,
    with two classes, the probability of the relevant one (the label named "relevant" or
    "positive", else the last). sentence-transformers' `CrossEncoder.predict` gives the same
    numbers (tested)."""

    kind, prefix = "classifier", "cross-encoder"

    def _match(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return self._run(pairs, self._match_batch)

    def _match_batch(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        import torch

        tok, model = self.model()
        enc = self._encode(tok, pairs, return_tensors="pt", padding=True, pad_to_multiple_of=PAD_MULTIPLE).to(model.device)
        logits = model(**enc).logits.float()
        if logits.shape[-1] == 1:
            return list(torch.sigmoid(logits[:, 0]).tolist())
        labels = {int(i): n.lower() for i, n in model.config.id2label.items()}
        pos = next((i for i, n in labels.items() if n in {"relevant", "positive"}), max(labels))
        return list(torch.softmax(logits, -1)[:, pos].tolist())


class HFMeanPooled(_Classified, Matcher):
    """Sentence embeddings, mean-pooled over each text's tokens and normalised (as
    sentence-transformers' Transformer, Pooling and Normalize modules compute them), scored by
    cosine similarity clipped to [0, 1]: `minilm` (`kalma.models.matcher`)."""

    kind = "encoder"
    max_length = 256  # all-MiniLM-L6-v2's sentence_bert_config: longer texts are cut, as there

    def _encode(self, tok: Any, texts: Sequence[Any], **kwargs: Any) -> Any:
        return tok(list(texts), truncation=True, max_length=self.max_length, **kwargs)

    def _plan(self, texts: Sequence[Any]) -> list[list[int]] | None:
        return None  # pairs go whole to `_match`, which plans the distinct texts they hold

    def _match(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        texts = list(dict.fromkeys(t for p in pairs for t in p))  # each distinct text embedded once
        vectors = dict(zip(texts, self._run_planned(texts, self._embed_batch)))
        return [max(0.0, sum(x * y for x, y in zip(vectors[a], vectors[b]))) for a, b in pairs]

    def _embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        import torch

        tok, model = self.model()
        enc = self._encode(tok, texts, return_tensors="pt", padding=True, pad_to_multiple_of=PAD_MULTIPLE).to(model.device)
        hidden = model(**enc).last_hidden_state.float()
        mask = enc["attention_mask"].unsqueeze(-1).float()
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return list(torch.nn.functional.normalize(pooled, dim=-1).tolist())
