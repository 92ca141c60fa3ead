"""What Inspect finds under `kalma/` (the `inspect_ai` entry point names this module): the tasks,
`inspect eval kalma/kalma_specific`, and the model provider, `--model kalma/template` (the suite's
LLM backends, `kalma.inspect_model`).

The tasks are `bench.inspect_task.kalma_task` with the question's setting fixed (`kalma_specific`,
`kalma_general`) or a parameter (`kalma`); this module only names them. Inspect prefixes a task's
name with its top-level package only when it finds that package installed under its own name; an
editable install of `kalma-bench` is not, so there each task is registered under its full name
instead, and `kalma/kalma_specific` works from either install.
"""

from __future__ import annotations

import inspect
from typing import Any

from inspect_ai import Task, task
from inspect_ai.model import modelapi
from inspect_ai.util import registry_info

from bench.inspect_task import kalma_task
from kalma.errors import KalmaError, one_line
from kalma.inspect_model import PROVIDER, KalmaModel, said


def _register(name: str, setting: str | None, doc: str) -> Any:
    whole = inspect.signature(kalma_task)

    def make(**params: Any) -> Task:
        try:
            return kalma_task(**params) if setting is None else kalma_task(setting=setting, **params)  # type: ignore[arg-type]
        except (KalmaError, OSError) as exc:  # a bad parameter, a file that is not there: one line
            raise said(one_line(exc)) from None

    make.__name__ = make.__qualname__ = name
    make.__doc__ = doc
    make.__signature__ = whole.replace(parameters=[p for p in whole.parameters.values() if setting is None or p.name != "setting"])  # type: ignore[attr-defined]
    made = task(make)
    if registry_info(made).name != f"kalma/{name}":
        made = task(name=f"kalma/{name}")(make)
    return made


PARAMETERS = "-T dataset=PATH retrieval=gold|ner removed=K seed=N kg=SPEC nli=SPEC judge=SPEC lm=SPEC metrics=NAMES compat=original"
kalma_specific = _register("kalma_specific", "specific", f"KaLMA's specific questions ({PARAMETERS}).")
kalma_general = _register("kalma_general", "general", f"KaLMA's general questions ({PARAMETERS}).")
kalma = _register("kalma", None, f"KaLMA, the question's setting a parameter (-T setting=specific|general; {PARAMETERS}).")

modelapi(name=PROVIDER)(KalmaModel)
