"""`kalma judge pairs` (evaluation/judge_pairs.py): each kind's rule broken on purpose, caught by the
independent check of every generated label against the KG (tests/e2e/test_judge_pairs.py)."""

from __future__ import annotations

from . import Mutation

SRC = "evaluation/judge_pairs.py"
KINDS_TEST = "tests/e2e/test_judge_pairs.py::test_each_kinds_accuracy_has_its_interval_and_the_failed_kinds_come_first"
DEMO = ("tests/e2e/test_judge_pairs.py::test_every_label_on_the_demo_dataset_is_right_by_its_kinds_rule",)

MUTATIONS = (
    Mutation(
        "a contradictory value that is in fact true of the subject",
        SRC,
        "if c.value_type == t.value_type and not self.true_of(t.subject, p, c) and",
        "if c.value_type == t.value_type and",
        DEMO,
    ),
    Mutation("a partial row citing everything it states", SRC, '"partial", [a, b], [(a, [a])]', '"partial", [a, b], [(a, [a, b])]', DEMO),
    Mutation(
        "a na triple left in the KG (knowledge removal removes nothing)",
        "bench/ablations.py",
        "        kg = e.knowledge_pool.without({t.key() for t in removed})",
        "        kg = e.knowledge_pool",
        DEMO,
    ),
    Mutation("an irrelevant row citing what it states", SRC, '"irrelevant", [s], [(other, [other])]', '"irrelevant", [s], [(s, [s])]', DEMO),
    Mutation("every label 1", SRC, "else int(said(judged) in claims)", "else 1", DEMO),
    Mutation(
        "generated pairs resampled by sentence, not by entry",
        "evaluation/judge_quality.py",
        "    key = {i: (pairs[i].dataset, pairs[i].entry or pairs[i].premise) for i in scored}",
        "    key = {i: (pairs[i].dataset, pairs[i].premise) for i in scored}",
        DEMO,
    ),
    Mutation(
        "a sentence kept without its stated value",
        SRC,
        '"doc": doc,',
        '"doc": doc.replace(p.stated[0].value_label, "it"),',
        DEMO,
    ),
    Mutation(
        "each kind's accuracy counting every pair right",
        "evaluation/judge_quality.py",
        'sums[f"ok@{p.kind}"][k] += v == p.label',
        'sums[f"ok@{p.kind}"][k] += 1',
        (KINDS_TEST,),
    ),
    Mutation(
        "the failed kinds not named first",
        "evaluation/judge_quality.py",
        "        order = weak + sorted(",
        "        order = sorted(",
        (KINDS_TEST,),
    ),
)
