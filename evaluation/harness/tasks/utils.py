"""The hooks KaLMA's task files name (`!function utils.…`); lm-eval imports this file by its path.
Everything here is the suite's own code, from `evaluation.harness`."""

from functools import partial

from evaluation.harness import aggregate, load, process_results  # noqa: F401 (named by the task files)

load_specific = partial(load, "specific")
load_general = partial(load, "general")


def correctness_micro(items: list[dict[str, int]]) -> float:
    return aggregate("correctness_micro", items)


def precision_micro(items: list[dict[str, int]]) -> float:
    return aggregate("precision_micro", items)


def recall_micro(items: list[dict[str, int]]) -> float:
    return aggregate("recall_micro", items)


def f1_micro(items: list[dict[str, int]]) -> float:
    return aggregate("f1_micro", items)
