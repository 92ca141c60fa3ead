"""The suite's own LLM backends as an Inspect model provider: `inspect eval … --model kalma/SPEC`.

SPEC is any `--llm` spec of the suite (`template`, `smollm2`, `hf:PATH`,
`openai-compatible:URL:MODEL`); `-M key=value` adds an option to it (`-M dtype=bf16`), since
Inspect reads a comma in `--model` as a second model. Every call goes through the backend's
`chat_many`: the call cache and the backend's batching, as `kalma answer` has them, with no
network where the backend needs none (Inspect's mock model fetches a tokenizer table to count
its tokens).

Inspect asks one sample at a time, concurrently; the samples that ask while a batch is being
answered are answered together as the next batch, so a local model sees batches as `kalma answer`
gives it (the first batch is whatever had asked when it began). Only one batch runs at a time,
in a worker thread: the event loop stays free, and a model is never called from two threads.
A run cancelled while a batch is being answered (Ctrl-C, a time limit) stops the model in its
thread, between two tokens or two batches, and waits for it: a process that exits with a thread
inside torch dies with "terminate called without an active exception" (signal 6), its log
unwritten.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any

import anyio
from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput, ModelUsage
from inspect_ai.tool import ToolChoice, ToolInfo

from .errors import KalmaError, one_line
from .models.base import LLM, Generation, GenParams, Message
from .progress import forget_stop, stop_at_next_step

PROVIDER = "kalma"
log = logging.getLogger(__name__)


def said(message: str) -> Exception:
    """A user's mistake as Inspect's command line says a missing prerequisite: its one line, no
    traceback (an error class Inspect does not export; without it, the line ends a traceback)."""
    try:
        from inspect_ai._util.error import PrerequisiteError
    except ImportError:
        return KalmaError(message)
    return PrerequisiteError(message)


def spec_of(model_name: str, model_args: dict[str, Any]) -> str:
    """The suite's spec for `--model kalma/NAME -M key=value …`."""
    return ",".join([model_name, *(f"{k}={v}" for k, v in model_args.items())])


def params_of(config: GenerateConfig) -> GenParams:
    """Inspect's generation settings as the backend's (unset ones at `kalma answer`'s defaults)."""
    default = GenParams()
    return GenParams(
        temperature=default.temperature if config.temperature is None else config.temperature,
        top_p=default.top_p if config.top_p is None else config.top_p,
        max_tokens=default.max_tokens if config.max_tokens is None else config.max_tokens,
        seed=config.seed,
    )


@dataclass
class _Ask:
    chat: list[Message]
    params: GenParams
    done: anyio.Event = field(default_factory=anyio.Event)
    answer: Generation | None = None
    error: BaseException | None = None


class KalmaModel(ModelAPI):
    """`kalma/SPEC`: the suite's backend SPEC (`kalma.models.get_llm`), batched across samples."""

    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None, config: GenerateConfig | None = None, **model_args: Any):
        super().__init__(model_name=model_name, base_url=base_url, api_key=api_key, config=config or GenerateConfig())
        from .models import get_llm

        self.spec = spec_of(model_name, model_args)
        try:
            self.llm: LLM = get_llm(self.spec)
        except (KalmaError, OSError) as exc:
            raise said(f"--model {PROVIDER}/{self.spec}: {one_line(exc)}") from None
        self.pending: list[_Ask] = []
        self.turn = anyio.Lock()

    def max_connections(self) -> int:
        return 4 * self.llm.batch_size  # enough samples asking at once to fill the next batch while one runs

    async def generate(self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice, config: GenerateConfig) -> ModelOutput:
        ask = _Ask([{"role": m.role, "content": m.text} for m in input], params_of(config))
        self.pending.append(ask)
        async with self.turn:  # whoever holds the turn answers every chat asked so far
            if not ask.done.is_set():
                batch, self.pending = self.pending, []
                await self._in_thread(batch)
                for each in batch:
                    each.done.set()
        if ask.error is not None:
            raise ask.error
        assert ask.answer is not None
        return self._output(ask.answer)

    async def _in_thread(self, batch: list[_Ask]) -> None:
        """`_answer(batch)` in a worker thread; when the caller is cancelled, the thread is asked to
        stop at its next safe point (a torch module's forward, a batch's end: see
        `stop_at_next_step`) and waited for. A thread cancelled before it began answers nothing."""
        guard, worker, finished = threading.Lock(), list[int](), threading.Event()
        cancelled = False

        def work() -> None:
            with guard:
                if cancelled:
                    return
                worker.append(threading.get_ident())
            try:
                log.info("%s/%s: answering a batch of %d chats", PROVIDER, self.spec, len(batch))  # shown with --log-level info
                self._answer(batch)
            finally:
                finished.set()

        try:
            await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        except BaseException:
            with guard:
                cancelled = True
            if worker:
                # never an exception sent into the thread: see kalma.progress.stop_at_next_step
                stop_at_next_step(worker[0])
                finished.wait()
                forget_stop(worker[0])  # a request that came after its last step: the pool reuses the thread
            raise

    def _answer(self, batch: list[_Ask]) -> None:
        """Answer `batch`, each group of one generation setting in one `chat_many` call."""
        for params in dict.fromkeys(a.params for a in batch):
            group = [a for a in batch if a.params == params]
            try:
                for a, gen in zip(group, self.llm.chat_many([a.chat for a in group], params)):
                    a.answer = gen
            except Exception as exc:  # noqa: BLE001 - handed to each sample that asked, as Inspect expects of a model call
                for a in group:
                    a.error = exc

    def _output(self, gen: Generation) -> ModelOutput:
        from .models import LLMS, describe

        out = ModelOutput.from_content(model=self.spec, content=gen.text, stop_reason="max_tokens" if gen.finish_reason == "length" else "stop")
        out.usage = ModelUsage(input_tokens=gen.prompt_tokens, output_tokens=gen.completion_tokens, total_tokens=gen.prompt_tokens + gen.completion_tokens)
        out.metadata = {"kalma": {"backend": describe(self.spec, LLMS), "cached": gen.cached, **({"note": self.llm.label_note} if self.llm.label_note else {})}}
        return out
