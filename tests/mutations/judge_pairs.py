"""`kalma judge pairs` (evaluation/judge_pairs.py): each kind's rule broken on purpose, caught by the
independent check of every generated label against the KG (tests/e2e/test_judge_pairs.py); per-kind
accuracy in `kalma judge evaluate`; and `kalma judge sensitivity`'s tau, flips and kappa against a hand
computation (tests/e2e/test_judge_sensitivity.py)."""

from __future__ import annotations

from . import Mutation

SRC = "evaluation/judge_pairs.py"
KINDS_TEST = "tests/e2e/test_judge_pairs.py::test_each_kinds_accuracy_has_its_interval_and_the_failed_kinds_come_first"
SENS = "bench/sensitivity.py"
SENS_TESTS = ("tests/e2e/test_judge_sensitivity.py",)
DEMO = ("tests/e2e/test_judge_pairs.py::test_every_label_on_the_demo_dataset_is_right_by_its_kinds_rule",)

MUTATIONS = (
    Mutation(
        "a contradictory value that is in fact true of the subject",
        SRC,
        "if kind == t.value_type and value not in true and name not in true and",
        "if kind == t.value_type and",
        DEMO,
    ),
    Mutation("a partial row citing everything it states", SRC, '"partial", [a, b], [(a, [a])]', '"partial", [a, b], [(a, [a, b])]', DEMO),
    Mutation(
        "a na triple left in the KG (knowledge removal removes nothing)",
        "kalma/removal.py",
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
    Mutation("Kendall's tau counting discordant pairs as concordant", SENS, "concordant + dx * dy", "concordant + abs(dx * dy)", SENS_TESTS),
    Mutation("Cohen's kappa without the chance agreement on 'no'", SENS, "chance = pa * pb + (1 - pa) * (1 - pb)", "chance = pa * pb", SENS_TESTS),
    Mutation("a tie counted as a flip", SENS, "        if dx * dy < 0:", "        if dx * dy <= 0:", SENS_TESTS),
    Mutation("tau's interval of a judge against itself", SENS, "_tau_of(systems, group[0], o)", "_tau_of(systems, o, o)", SENS_TESTS),
    Mutation(
        "kappa over the first judge's decisions twice",
        SENS,
        "them = {(s, *k): v for s in systems for k, v in decisions(runs[other][s].rows).items()}",
        "them = {(s, *k): v for s in systems for k, v in decisions(runs[nli[0]][s].rows).items()}",
        SENS_TESTS,
    ),
    Mutation(
        "a G-Eval judge scoring its own answers not said",
        "evaluation/runner.py",
        "            first.append(own)",
        "            pass",
        ("tests/e2e/test_judge_sensitivity.py::test_a_geval_judge_scoring_its_own_answers_is_said_in_one_line",),
    ),
    Mutation(
        "compare blind to judges that differ beyond their spec",
        "evaluation/compare.py",
        "        elif why := _same_judges(a, b, m):",
        "        elif False and (why := _same_judges(a, b, m)):",
        ("tests/e2e/test_judge_sensitivity.py::test_compare_refuses_alignment_from_one_spec_with_other_weights",),
    ),
    Mutation(
        "a table judge's weights not told apart by its bytes",
        "evaluation/identity.py",
        'what["weights"] = f"table sha256 {digest}" if digest else',
        'what["weights"] = "table" if digest else',
        ("tests/e2e/test_judge_sensitivity.py::test_compare_refuses_alignment_from_one_spec_with_other_weights",),
    ),
    Mutation(
        "a sentence that misses a stated value kept",
        SRC,
        "        if not all(mentions(doc, [*world.value_names(t), *(s.value_label for s in p.said_as[i : i + 1])]) for i, t in enumerate(named)):",
        "        if False:",
        ("tests/e2e/test_judge_pairs.py::test_an_llm_writes_the_sentences_and_a_rerun_asks_it_nothing",),
    ),
    Mutation(
        "the leaderboard's Read first drops the self-judging G-Eval warning",
        "bench/leaderboard.py",
        "    out += [c for c in s.caveats if c.startswith(SELF_JUDGED)]  # a G-Eval judge rating its own answers\n",
        "",
        ("tests/e2e/test_judge_sensitivity.py::test_a_geval_judge_scoring_its_own_answers_is_said_in_one_line",),
    ),
)
# issue 65 §1 (tests/unit/test_audit_65.py, tests/e2e/test_audit_65.py)
AUDIT_UNIT = "tests/unit/test_audit_65.py"
MUTATIONS += (
    Mutation(
        "a contradictory value of another class than the true value's (a city replaced by a person)",
        SRC,
        "and name not in true and (not mine or not of.isdisjoint(mine))",
        "and name not in true",
        (f"{AUDIT_UNIT}::test_a_contradictory_value_is_of_the_true_values_class",),
    ),
    Mutation(
        "a replacement checked against the subject's values by id only, not by label",
        SRC,
        "value not in true and name not in true and",
        "value not in true and",
        (f"{AUDIT_UNIT}::test_a_replacement_named_like_a_true_value_is_no_contradiction",),
    ),
    Mutation(
        "a stated value found as a substring ('male' in 'female')",
        SRC,
        "    return any(_whole_word(text, _folded(n)) for n in names if n.strip())",
        "    return any(_folded(n) in text for n in names if n.strip())",
        (f"{AUDIT_UNIT}::test_a_stated_value_is_found_as_a_whole_word_accents_folded",),
    ),
    Mutation(
        "a stated value found without folding accents",
        SRC,
        '    return "".join(c for c in unicodedata.normalize("NFKD", normalize_text(text).lower()) if not unicodedata.combining(c))',
        "    return normalize_text(text).lower()",
        (f"{AUDIT_UNIT}::test_a_stated_value_is_found_as_a_whole_word_accents_folded",),
    ),
)
AUDIT_E2E = "tests/e2e/test_audit_65.py"
MUTATIONS += (
    Mutation(
        "judge pairs drawn at seed 0 whatever --seed says (the rows still record the seed given)",
        SRC,
        '    r = rng(seed, "judge-pairs", entry.id)',
        '    r = rng(0, "judge-pairs", entry.id)',
        (f"{AUDIT_E2E}::test_judge_pairs_seed_changes_every_kinds_draw",),
    ),
    Mutation(
        "judge pairs drawn from all the entry's people's knowledge, its minimum set ignored",
        SRC,
        "    found = entry.minimum_set or [t for q in entry.people if q in world.graphs for t in world.graphs[q].triples]",
        "    found = [t for q in entry.people if q in world.graphs for t in world.graphs[q].triples]",
        (f"{AUDIT_E2E}::test_judge_pairs_draw_from_the_entrys_minimum_set",),
    ),
    Mutation(
        "a reply of two sentences kept (its first sentence used)",
        SRC,
        "        if len(sentences) != 1:",
        "        if not sentences:",
        (f"{AUDIT_E2E}::test_judge_pairs_discards_and_counts_a_reply_of_two_sentences",),
    ),
)
MUTATIONS += (
    Mutation(
        "a kind named as failed when its point lies below the overall figure, its interval not",
        "evaluation/judge_quality.py",
        "if overall is not None and iv.high is not None and iv.high < overall]",
        "if overall is not None and iv.point is not None and iv.point < overall]",
        (f"{AUDIT_UNIT}::test_a_kind_fails_only_when_its_whole_interval_lies_below_and_the_worst_comes_first",),
    ),
    Mutation(
        "the failed kinds in alphabetical order, not worst first",
        "evaluation/judge_quality.py",
        "        return sorted(low, key=lambda k: self.kind_intervals[k].point or 0.0)",
        "        return sorted(low)",
        (f"{AUDIT_UNIT}::test_a_kind_fails_only_when_its_whole_interval_lies_below_and_the_worst_comes_first",),
    ),
)
SENS_AUDIT = "tests/e2e/test_judge_sensitivity.py::"
MUTATIONS += (
    Mutation(
        "the sensitivity's tau interval drawn at seed 0 whatever --seed says",
        SENS,
        "            taus = bootstrap(sums, estimates, resamples=resamples, seed=seed, level=level) if estimates else {}",
        "            taus = bootstrap(sums, estimates, resamples=resamples, seed=0, level=level) if estimates else {}",
        (f"{SENS_AUDIT}test_the_tau_interval_follows_the_seed_and_the_report_names_the_ties_broken",),
    ),
    Mutation(
        "the sensitivity report silent on the ties another judge broke",
        SENS,
        """            ties = f"; tie broken: {'; '.join(f'{x} / {y}' for x, y in a['tie_broken'])}" if a["tie_broken"] else \"\"""",
        '            ties = ""',
        (f"{SENS_AUDIT}test_the_tau_interval_follows_the_seed_and_the_report_names_the_ties_broken",),
    ),
    Mutation(
        "an [NA] mark judged irrelevant left out of the right decisions",
        SENS,
        'NA_RIGHT = {"entails absent knowledge", "irrelevant: counts correct"}',
        'NA_RIGHT = {"entails absent knowledge"}',
        (f"{SENS_AUDIT}test_an_na_mark_judged_irrelevant_counts_as_right_in_the_decisions",),
    ),
    Mutation(
        "a board of submissions on two datasets re-scored",
        SENS,
        "    if len(digests) > 1:\n        raise SensitivityError(",
        "    if False:\n        raise SensitivityError(",
        (f"{SENS_AUDIT}test_a_board_of_two_datasets_is_refused_in_one_line",),
    ),
)
MUTATIONS += (
    Mutation(
        "a judge's dtype not part of its identity",
        "evaluation/identity.py",
        'DECISIVE = ("spec", "weights", "threshold", "direction", "dtype")',
        'DECISIVE = ("spec", "weights", "threshold", "direction")',
        (f"{SENS_AUDIT}test_compare_leaves_out_figures_whose_judges_differ_in_dtype_or_are_recorded_on_one_side",),
    ),
    Mutation(
        "compare checking the NLI judge alone, not G-Eval's",
        "evaluation/compare.py",
        '    for role in (r for r in ("nli", "judge") if r in m.needs):',
        '    for role in (r for r in ("nli",) if r in m.needs):',
        (f"{SENS_AUDIT}test_compare_leaves_out_geval_figures_whose_judges_differ",),
    ),
    Mutation(
        "compare leaving out judge-dependent figures only when neither summary records its judges",
        "evaluation/compare.py",
        '        elif (a.judges is None) != (b.judges is None) and set(m.needs) & {"nli", "judge"}:',
        '        elif a.judges is None and b.judges is None and set(m.needs) & {"nli", "judge"}:',
        (f"{SENS_AUDIT}test_compare_leaves_out_figures_whose_judges_differ_in_dtype_or_are_recorded_on_one_side",),
    ),
    Mutation(
        "the self-judging warning comparing model names case-sensitively",
        "evaluation/text_quality.py",
        '    return name.split(",")[0].split(":")[-1].split("/")[-1].strip().lower()',
        '    return name.split(",")[0].split(":")[-1].split("/")[-1].strip()',
        (f"{AUDIT_UNIT}::test_the_self_judging_warning_knows_one_model_however_it_is_written",),
    ),
    Mutation(
        "the self-judging warning keeping a model's path",
        "evaluation/text_quality.py",
        '    return name.split(",")[0].split(":")[-1].split("/")[-1].strip().lower()',
        '    return name.split(",")[0].split(":")[-1].strip().lower()',
        (f"{AUDIT_UNIT}::test_the_self_judging_warning_knows_one_model_however_it_is_written",),
    ),
)
