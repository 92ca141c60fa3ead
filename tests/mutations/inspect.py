"""KaLMA in Inspect (evaluation/inspect_scorer.py, kalma/inspect_log.py): its figures pooled as the
paper pools them, its standard errors clustered by entry, and only whole KaLMA logs read as answers."""

from __future__ import annotations

from . import Mutation

E2E = "tests/e2e/test_inspect.py"

MUTATIONS = (
    Mutation(
        "Inspect's micro figures as means of per-sample ratios",
        "evaluation/inspect_scorer.py",
        "        return {k: v for k, v in figures(rows_of(scores), active).items() if v is not None}",
        "        each = [figures([r], active) for r in rows_of(scores)]\n"
        "        return {k: float(np.mean([e[k] for e in each if e[k] is not None])) for k in each[0] if any(e[k] is not None for e in each)}",
        (E2E,),
    ),
    Mutation(
        "the evaluator's correctness_micro declared as a mean of ratios",
        "evaluation/citation_quality.py",
        '"correctness_micro": Ratio(Count("correct"), Count("citations")),',
        '"correctness_micro": Mean("correctness"),',
        (E2E,),
    ),
    Mutation(
        "the clustering dropped: one sample, one cluster",
        "evaluation/inspect_scorer.py",
        "    clustered = stderr(cluster=cluster)",
        "    clustered = stderr()",
        (E2E,),
    ),
    Mutation(
        "a sample's influence taken as its own ratio (no linearisation)",
        "evaluation/figures.py",
        "        return (each[self.num] - float(sums[self.num]) / den * each[self.den]) / den",
        "        return np.where(each[self.den] > 0, each[self.num] / np.where(each[self.den] > 0, each[self.den], 1.0), 0.0) / len(each[self.den])",
        (E2E,),
    ),
    Mutation(
        "another task's log read as answers",
        "kalma/inspect_log.py",
        "    if task not in TASKS:\n        raise",
        "    if False:\n        raise",
        (E2E,),
    ),
    Mutation(
        "an unfinished log read as answers",
        "kalma/inspect_log.py",
        "    if log.status != FINISHED:",
        "    if log.status not in (FINISHED, 'cancelled'):",
        (E2E,),
    ),
    Mutation(
        "samples that ended in an error left out silently",
        "kalma/inspect_log.py",
        "    failed = [s for s in log.samples or [] if s.error is not None]",
        "    failed = []",
        (E2E,),
    ),
    # the suite's backends as Inspect's model provider (kalma/inspect_model.py), and the task's one-line refusals
    Mutation(
        "kalma/ models asked one sample at a time",
        "kalma/inspect_model.py",
        "                batch, self.pending = self.pending, []",
        "                batch, self.pending = [ask], [a for a in self.pending if a is not ask]",
        (f"{E2E}::test_kalma_models_batch_across_samples_and_use_the_call_cache",),
    ),
    Mutation(
        "kalma/ models called past the call cache",
        "kalma/inspect_model.py",
        "                for a, gen in zip(group, self.llm.chat_many([a.chat for a in group], params)):",
        "                for a, gen in zip(group, self.llm._generate(self.llm._prepare([a.chat for a in group], params), params)):",
        (f"{E2E}::test_kalma_models_batch_across_samples_and_use_the_call_cache",),
    ),
    Mutation(
        "Ctrl-C not passed to the model's thread: the run waits for the whole batch",
        "kalma/inspect_model.py",
        "                stop_at_next_step(worker[0])\n",
        "",
        (f"{E2E}::test_ctrl_c_stops_a_kalma_model_mid_batch",),
    ),
    Mutation(
        "a thread asked to stop decodes on",
        "kalma/progress.py",
        "    if _stopping and (me := threading.get_ident()) in _stopping:",
        "    if False and (me := threading.get_ident()) in _stopping:",
        ("tests/unit/test_decoding_stop.py",),
    ),
    Mutation(
        "a backend without decoding steps asked to stop answers every batch",
        "kalma/progress.py",
        "    if _stopping:  # a backend that takes no decoding steps here (a server's) stops between batches",
        "    if False:",
        ("tests/unit/test_decoding_stop.py",),
    ),
    Mutation(
        "a prefill asked to stop runs to its end (no check at a module's forward)",
        "kalma/progress.py",
        "    if _stopping and _watch is None and torch is not None:",
        "    if False:",
        ("tests/unit/test_decoding_stop.py",),
    ),
    Mutation(
        "the module hook left on after the request is taken (every forward slowed)",
        "kalma/progress.py",
        "    elif not _stopping and _watch is not None:",
        "    elif False:",
        ("tests/unit/test_decoding_stop.py",),
    ),
    Mutation(
        "a run cancelled while its model loads calibrates and reads prompts on (no check after the load)",
        "kalma/models/hf.py",
        "        stop_point()  # a run cancelled while the model loaded stops here, before calibrating or decoding",
        "        pass",
        ("tests/unit/test_decoding_stop.py",),
    ),
    Mutation(
        "a stop request that came after the thread's last step kept, stopping the pool's next call on that thread",
        "kalma/progress.py",
        "    _stopping.discard(thread)",
        "    pass",
        ("tests/unit/test_decoding_stop.py",),
    ),
    Mutation(
        "a missing -T dataset left to the reader's OSError",
        "bench/inspect_task.py",
        '    if where != "demo" and not Path(where).is_file():',
        "    if False:",
        (f"{E2E}::test_a_missing_dataset_is_one_line",),
    ),
)
