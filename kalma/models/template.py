"""`template`: a deterministic offline "LLM" that answers prompts with fixed patterns. It exists
for tests and the offline demo; its outputs are labelled as template answers everywhere and are
never a language model's result.

It knows no stage's wording: each stage registers, beside the prompts it writes, the patterns
that answer them (`register_task`): `baselines.prompt` the attributed answer, and
`dataset_builder.prompts` the builder's steps. A prompt no pattern claims gets an honest
`[NA]` reply.

It writes the languages the suite has text for (`kalma.languages.phrasing`): a stage's prompt in
French gets French sentences. A prompt for any other language (the English text asking a model
to write in it) is refused in one line, never answered in English.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..languages.phrasing import refuse_unwritten, unwritten_in
from .base import LLM, Generation, GenParams, Message

NO_PATTERN = "The template backend has no pattern for this prompt [NA]."


@dataclass(frozen=True)
class TemplateTask:
    name: str
    matches: Callable[[str], bool]  # does this prompt (the last user turn) belong to the task?
    respond: Callable[[str], str]


TASKS: dict[str, TemplateTask] = {}


def register_task(task: TemplateTask) -> None:
    TASKS[task.name] = task


class TemplateLLM(LLM):
    spec = "template"
    label_note = "offline template backend: fixed patterns filled from the given knowledge, not a language model"
    batch_size = 64

    def cache_identity(self) -> str | None:
        """Never cached: a reply is a pattern filled in microseconds, less than a cache round trip
        (7 a builder entry), and the same on every run."""
        return None

    def _generate(self, batch: Sequence[list[Message]], params: GenParams) -> list[Generation]:
        return [Generation(text=self.respond(m[-1]["content"]), model=self.spec) for m in batch]

    def respond(self, prompt: str) -> str:
        """The reply of the first registered task that claims `prompt`; a ConfigError for a prompt
        in a language the suite has no sentences written in."""
        if code := unwritten_in(prompt):
            raise refuse_unwritten(code)
        task = next((t for t in TASKS.values() if t.matches(prompt)), None)
        return task.respond(prompt) if task else NO_PATTERN
