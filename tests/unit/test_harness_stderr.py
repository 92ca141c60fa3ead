"""lm-evaluation-harness gives a standard error only for the aggregations it knows: KaLMA's own
micro figures get N/A, and docs/statistics.md says so. If a release of the harness lets a task's
aggregation supply one, this fails, and the task should supply the bootstrap over entries."""

from __future__ import annotations

import importlib.util

import pytest

from evaluation.harness import TASKS_DIR

pytest.importorskip("lm_eval")


def test_the_harness_gives_kalmas_own_aggregations_no_stderr():
    from lm_eval.api.metrics import mean, stderr_for_metric

    spec = importlib.util.spec_from_file_location("kalma_task_utils", TASKS_DIR / "utils.py")
    assert spec is not None and spec.loader is not None
    utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    assert stderr_for_metric(mean, 100) is not None  # the API does give one where it knows the aggregation
    for name in ("correctness_micro", "precision_micro", "recall_micro", "f1_micro"):
        assert stderr_for_metric(getattr(utils, name), 100) is None, name
