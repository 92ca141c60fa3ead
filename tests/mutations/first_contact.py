"""First contact (issues 54 and 59, seventh and eighth passes): what a new user meets through the
command line, the harness's files, the tables a verdict goes to and the pages it is shown on. Each
mutation undoes one fix or guarded behaviour; tests/e2e/test_first_contact_7.py and
test_first_contact_8.py hold the tests that catch them."""

from __future__ import annotations

from . import Mutation

T = "tests/e2e/test_first_contact_7.py"


T8 = "tests/e2e/test_first_contact_8.py"


def _t(name: str) -> tuple[str, ...]:
    return (f"{T}::{name}",)


def _t8(name: str) -> tuple[str, ...]:
    return (f"{T8}::{name}",)


MUTATIONS = (
    # §1's list, in these files
    Mutation(
        "harness documents with no question",
        "evaluation/harness/__init__.py",
        "        if not question:\n            continue\n",
        "",
        _t("test_harness_documents_are_the_entries_with_that_question"),
    ),
    Mutation(
        "`kalma_general` samples scored as specific",
        "kalma/answers_file.py",
        'setting: Setting = "general" if doc.get("setting") == "general" else "specific"',
        'setting: Setting = "specific"',
        _t("test_a_limited_run_is_scored_on_what_it_asked_with_its_provenance"),
    ),
    Mutation(
        "TSV written with commas",
        "kalma/frames.py",
        'delimiter="\\t" if out.suffix.lower() == ".tsv" else ","',
        'delimiter=","',
        _t("test_verdict_tables_hold_no_formula_and_tsv_is_tab_separated"),
    ),
    # §2
    Mutation(
        "verdict tables written raw (a cell opening with = is a formula)",
        "kalma/frames.py",
        "writer.writerows({k: csv_safe(v) for k, v in r.items()} for r in rows)",
        "writer.writerows(rows)",
        _t("test_verdict_tables_hold_no_formula_and_tsv_is_tab_separated"),
    ),
    Mutation(
        "a harness sample's position named as an item",
        "kalma/answers_file.py",
        'unit = foreign.unit if foreign else "line"',
        'unit = "item" if foreign else "line"',
        _t("test_a_duplicate_harness_sample_is_named_by_its_line"),
    ),
    # §3.1
    Mutation(
        "answer without --kg retrieves from the demo graph",
        "baselines/cli.py",
        '    return built or "demo"',
        '    return "demo"',
        _t("test_answer_and_retrieve_use_the_graph_the_dataset_was_built_from"),
    ),
    Mutation(
        "another --kg than the dataset's not said",
        "baselines/cli.py",
        "other = built is not None and retrieving and not _same_kg(given, built)",
        "other = False",
        _t("test_answer_and_retrieve_use_the_graph_the_dataset_was_built_from"),
    ),
    # §3.2
    Mutation(
        "the harness's folder read as its oldest run",
        "kalma/answers_file.py",
        "    newest = kalma[-1]\n",
        "    newest = kalma[0]\n",
        _t("test_the_output_folder_is_read_as_its_newest_run_and_said"),
    ),
    Mutation(
        "the files a pattern gave --answers not refused",
        "evaluation/cli.py",
        "    if extra:\n",
        "    if False:\n",
        _t("test_the_output_folder_is_read_as_its_newest_run_and_said"),
    ),
    # §3.3
    Mutation(
        "lm_eval --limit ignored",
        "kalma/answers_file.py",
        'if counted.get("effective") is not None and counted["effective"] < counted.get("original", 0):',
        "if False:",
        _t("test_a_limited_run_is_scored_on_what_it_asked_with_its_provenance"),
    ),
    Mutation(
        "the answers' own provenance left out of the evaluation's",
        "kalma/answers_file.py",
        "        return config if isinstance(config, dict) else {}",
        "        return {}",
        _t("test_a_limited_run_is_scored_on_what_it_asked_with_its_provenance"),
    ),
    Mutation(
        "bench submit asks for --model the results file names",
        "bench/submissions.py",
        '        merged.setdefault("model", named)',
        "        pass",
        _t("test_bench_submit_files_a_harness_run_under_the_model_its_results_file_names"),
    ),
    # §3.5
    Mutation(
        "lm-eval's results file read as answers",
        "kalma/answers_file.py",
        "        _not_results_file(path, first)\n",
        "",
        _t("test_files_of_other_kinds_are_named"),
    ),
    Mutation(
        "another task's samples read as KaLMA's",
        "kalma/answers_file.py",
        'if not isinstance(one["doc"].get("id"), str) or "entry" not in one["doc"]:',
        "if False:",
        _t("test_files_of_other_kinds_are_named"),
    ),
    Mutation(
        "records of another tool counted as corrupt lines",
        "kalma/answers_file.py",
        "        other_fields(path)\n",
        "",
        _t("test_files_of_other_kinds_are_named"),
    ),
    Mutation(
        "a Parquet file counted as corrupt lines",
        "kalma/jsonl.py",
        'if head == b"PAR1":',
        "if False:",
        _t("test_files_of_other_kinds_are_named"),
    ),
    # §3.7
    Mutation(
        "an interrupted build says only 'interrupted'",
        "dataset_builder/build.py",
        'raise Interrupted(f"interrupted: {kept(',
        'raise KeyboardInterrupt(f"interrupted: {kept(',
        _t("test_a_stopped_build_says_what_it_keeps_leaves_no_lock_and_resumes"),
    ),
    Mutation(
        "SIGTERM left to its default: kg serve's folder stays (its own folder, found by its server's --location)",
        "kalma/cli.py",
        "before = signal.signal(signal.SIGTERM, on_sigterm) if own else None",
        "before = None",
        ("tests/e2e/test_first_contact_6.py::test_sigterm_stops_kg_serve_and_its_server_and_removes_its_folder",),
    ),
    Mutation(
        "SIGTERM left to its default (lock files stay, nothing said)",
        "kalma/cli.py",
        "before = signal.signal(signal.SIGTERM, on_sigterm) if own else None",
        "before = None",
        _t("test_a_stopped_build_says_what_it_keeps_leaves_no_lock_and_resumes"),
    ),
    # §3.8
    Mutation(
        "a nested bracket counted as three malformed items",
        "kalma/citations.py",
        "nested=bool(inner)",
        "nested=False",
        _t("test_a_nested_bracket_is_one_malformed_item"),
    ),
    # §3.9
    Mutation(
        "model options the metrics do not use go unchecked",
        "evaluation/cli.py",
        "        if option not in needed:\n",
        "        if False:\n",
        _t("test_model_options_no_chosen_metric_uses_are_refused"),
    ),
    Mutation(
        "a submission's url not checked",
        "bench/submissions.py",
        "if isinstance(url, str) and url and not _web_address(url):",
        "if False:",
        _t("test_a_submission_url_must_be_a_web_address"),
    ),
    # §3.11
    Mutation(
        "answer loads spaCy and the KG before asking the server",
        "baselines/pipeline.py",
        "        reachable_first(llm)  # a server that is not there is said before spaCy, the KG and /models make it wait\n",
        "        pass\n",
        _t("test_a_refused_server_is_named_before_anything_else_loads"),
    ),
    Mutation(
        "build loads the KG and the scorer before asking the server",
        "dataset_builder/build.py",
        "    reachable_first(llm)  # a server that is not there is said before the KG and the scorer load\n",
        "",
        _t("test_a_refused_server_is_named_before_anything_else_loads"),
    ),
    # §3.12
    Mutation(
        "check --lenient exits 1 on bad lines",
        "kalma/cli.py",
        "    if res.errors and not lenient:\n",
        "    if res.errors:\n",
        _t("test_lenient_means_accept_in_check_as_in_evaluate"),
    ),
    Mutation(
        "build --window's default in prose only",
        "dataset_builder/cli.py",
        "    default=WINDOW,\n    show_default=True,\n",
        "    default=WINDOW,\n",
        _t("test_build_window_default_in_help_and_the_release_file_as_the_kg_importer_takes_it"),
    ),
    Mutation(
        "bench run mentions --no-cache when the cache served nothing",
        "bench/cli.py",
        'if cached else ""  # advice only where the cache served answers',
        'if True else ""',
        _t("test_bench_run_mentions_no_cache_only_where_the_cache_served"),
    ),
    # issue 59 §3: a server that starts late
    Mutation(
        "a refused server given up at once",
        "kalma/models/openai_backend.py",
        "        if wait <= 0:\n",
        "        if True:\n",
        _t8("test_a_server_that_starts_late_is_named_at_once_and_waited_for"),
    ),
    Mutation(
        "the wait's bound not kept",
        "kalma/models/openai_backend.py",
        "        while (left := wait - (time.monotonic() - began)) > 0:",
        "        while (left := 3 * wait - (time.monotonic() - began)) > 0:",
        _t8("test_a_server_that_never_starts_is_given_up_after_the_wait_said"),
    ),
    Mutation(
        "the attempts not said",
        "kalma/models/openai_backend.py",
        '            print(f"note: attempt {attempt}: still refused',
        '            0 and print(f"note: attempt {attempt}: still refused',
        _t8("test_a_server_that_never_starts_is_given_up_after_the_wait_said"),
    ),
    Mutation(
        "Ctrl-C during the wait said as a bare interruption",
        "kalma/models/openai_backend.py",
        '            raise Interrupted(f"interrupted while waiting for {base_url}',
        '            raise KeyboardInterrupt(f"interrupted while waiting for {base_url}',
        _t8("test_ctrl_c_stops_the_wait_for_a_server"),
    ),
    Mutation(
        "a scorer spec's wait ignored",
        "kalma/models/openai_backend.py",
        "timeout=timeout, identity=identity, wait=wait)\n\n\ndef _connects",
        "timeout=timeout, identity=identity)\n\n\ndef _connects",
        _t8("test_a_scorer_spec_takes_the_wait_too"),
    ),
    # §5.1: an interrupted evaluation
    Mutation(
        "another run's summary kept until this one ends",
        "evaluation/runner.py",
        "        _mark_unfinished(out, len(answer_list), answer_models, options.language)  # before the first row",
        "        0 and _mark_unfinished(out, len(answer_list), answer_models, options.language)  # before the first row",
        _t8("test_an_interrupted_overwrite_leaves_no_other_systems_summary"),
    ),
    Mutation(
        "another run's page kept",
        "evaluation/runner.py",
        "    out.joinpath(PAGE_FILE).unlink(missing_ok=True)\n",
        "",
        _t8("test_an_interrupted_overwrite_leaves_no_other_systems_summary"),
    ),
    Mutation(
        "compare blind to a scores header's count",
        "evaluation/compare.py",
        "    if isinstance(to_score, int) and rows < to_score:",
        "    if False:",
        _t8("test_compare_names_an_unfinished_evaluation_and_the_leaderboard_sets_it_aside"),
    ),
    Mutation(
        "compare blind to a summary's `finished`",
        "evaluation/compare.py",
        '    return None if finished is not False else f"{rows} answers scored',
        '    return None if True else f"{rows} answers scored',
        _t8("test_compare_names_an_unfinished_evaluation_and_the_leaderboard_sets_it_aside"),
    ),
    Mutation(
        "the leaderboard ranks an unfinished evaluation",
        "bench/leaderboard.py",
        "        if not rec.summary.finished:  # read from the record",
        "        if False:  # read from the record",
        _t8("test_compare_names_an_unfinished_evaluation_and_the_leaderboard_sets_it_aside"),
    ),
    Mutation(
        "a finished summary not said finished",
        "evaluation/runner.py",
        "        finished=complete,\n",
        "",
        _t8("test_compare_names_an_unfinished_evaluation_and_the_leaderboard_sets_it_aside"),
    ),
    # §5.6: doubled brackets
    Mutation(
        "doubled brackets read as unclosed and unopened",
        "kalma/citations.py",
        "            if len(token) > 1 and (w := _WRAPPED_RE.match(text, i))",
        "            if False and (w := _WRAPPED_RE.match(text, i))",
        _t8("test_doubled_brackets_are_closed_and_nested_counts_once_however_deep"),
    ),
    Mutation(
        "a wrapped bracket's citations dropped",
        "kalma/citations.py",
        '                Bracket(start, end, text[start:end], cits, na, [*errs, MarkupError("nested"',
        '                Bracket(start, end, text[start:end], [], na, [*errs, MarkupError("nested"',
        _t8("test_doubled_brackets_are_closed_and_nested_counts_once_however_deep"),
    ),
    # §5.7: one answer dominating the micro figures
    Mutation(
        "an answer holding most citations not named",
        "evaluation/runner.py",
        "    return out + dominant(rows)\n",
        "    return out\n",
        _t8("test_an_answer_holding_most_citations_is_named_first"),
    ),
    Mutation(
        "every answer named as dominant",
        "evaluation/runner.py",
        "        if total and n / total > max(DOMINANT_SHARE, 2 / len(held)):",
        "        if total and n / total > 0:",
        _t8("test_an_answer_holding_most_citations_is_named_first"),
    ),
    # §5.3: compare on few entries
    Mutation(
        "the smallest attainable p from every entry, not the differing ones",
        "evaluation/uncertainty.py",
        "        return None if self.differing is None else min(1.0, 2.0 / 2**self.differing)",
        "        return None if self.differing is None else min(1.0, 2.0 / 2 ** (self.differing + 1))",
        _t8("test_compare_on_few_entries_says_what_the_test_and_the_interval_can_show"),
    ),
    Mutation(
        "entries counted as differing when a swap leaves the difference",
        "evaluation/uncertainty.py",
        "(np.abs(alone - signed[k]) > 1e-12 * max(1.0, observed))",
        "(np.abs(alone - signed[k]) >= 0)",
        _t8("test_compare_on_few_entries_says_what_the_test_and_the_interval_can_show"),
    ),
    Mutation(
        "an unreliable interval on few entries not said",
        "evaluation/compare.py",
        "    if c.entries < FEW_ENTRIES:",
        "    if c.entries < 3:",
        _t8("test_compare_on_few_entries_says_what_the_test_and_the_interval_can_show"),
    ),
    Mutation(
        "compare's n/a figures without a reason",
        "evaluation/compare.py",
        '    said = [f"- {k}: {why}" for k, why in c.why.items()] + _few(c)',
        "    said = _few(c)",
        _t8("test_compare_on_few_entries_says_what_the_test_and_the_interval_can_show"),
    ),
    # §5.5: the leaderboard page on a screen
    Mutation(
        "identical backends repeated in every row",
        "bench/leaderboard.py",
        '    return found.pop() if len(found) == 1 else ""',
        '    return ""',
        _t8("test_the_leaderboard_fits_1400_and_1920_pixels_and_keeps_what_to_read_first"),
    ),
    Mutation(
        "Read first left to a last column",
        "bench/leaderboard.py",
        '            + (f\'<div class="read-first"><b>Read first:</b> {prose(r.read_first)}</div>\' if r.read_first else "")\n',
        "",
        _t8("test_the_leaderboard_fits_1400_and_1920_pixels_and_keeps_what_to_read_first"),
    ),
    Mutation(
        "the full-knowledge-pool note dropped from the board",
        "bench/leaderboard.py",
        "    out += [c for c in s.caveats if FULL_POOL in c]",
        "    out += []",
        _t8("test_the_leaderboard_fits_1400_and_1920_pixels_and_keeps_what_to_read_first"),
    ),
    Mutation(
        "the board's tables not kept within the page",
        "bench/leaderboard.py",
        ".wide{{overflow-x:auto;max-width:100%}}",
        ".wide{{}}",
        _t8("test_the_leaderboard_fits_1400_and_1920_pixels_and_keeps_what_to_read_first"),
    ),
    # §5.9: smaller things
    Mutation(
        "a Parquet file counted as corrupt lines",
        "kalma/jsonl.py",
        '    if not _opens_with(path, b"["):\n        _not_delimited(path, kind)\n',
        "",
        _t8("test_answer_says_a_csv_dataset_is_one_and_evaluate_help_lists_every_entailment_backend"),
    ),
    Mutation(
        "evaluate --help lists a fixed few --nli backends",
        "evaluation/cli.py",
        "labels from a table ({ENTAILMENT.forms()}).",
        "labels from a table (hf-seq2seq:ID, hf-nli:ID, llm:SPEC, table:FILE, lexical).",
        _t8("test_answer_says_a_csv_dataset_is_one_and_evaluate_help_lists_every_entailment_backend"),
    ),
    Mutation(
        "the build's interrupt names files that are not there",
        "dataset_builder/build.py",
        "            files = [name for name, kept_ in stays if kept_]",
        "            files = [name for name, kept_ in stays]",
        ("tests/e2e/test_first_contact_7.py::test_a_stopped_build_says_what_it_keeps_leaves_no_lock_and_resumes",),
    ),
    Mutation(
        "a board's dataset titled by a file name that says nothing",
        "bench/records.py",
        "        if stem.lower() not in GENERIC_STEMS:",
        "        if True:",
        _t8("test_compare_names_an_unfinished_evaluation_and_the_leaderboard_sets_it_aside"),
    ),
    Mutation(
        "verdicts.html shows raw backticks",
        "evaluation/verdict_page.py",
        '    return _CODE_RE.sub(r"<code>\\1</code>", html.escape(text))',
        "    return html.escape(text)",
        _t8("test_compare_on_few_entries_says_what_the_test_and_the_interval_can_show"),
    ),
    # §5.8: harness samples
    Mutation(
        "harness samples told to carry a `kg` they cannot",
        "kalma/answers_file.py",
        'header={"kg_given": "pool", **made})',
        "header=made)",
        _t8("test_harness_samples_are_scored_as_given_the_pool_their_documents_hold"),
    ),
)

# ---------------------------------------------------------------- issue 65 §6 (first-contact, ninth pass): tests/e2e/test_first_contact_9.py
T9 = "tests/e2e/test_first_contact_9.py"


def _t9(name: str) -> tuple[str, ...]:
    return (f"{T9}::{name}",)


MUTATIONS += (
    Mutation(
        "§6.2 a class with no linking properties of its own gets none (a novel's links never drawn)",
        "dataset_builder/from_kg.py",
        "for p in (entity_class(c).properties or every)",
        "for p in entity_class(c).properties",
        _t9("test_from_kg_draws_the_classes_named_says_each_class_pair_and_takes_pairs"),
    ),
    Mutation(
        "§6.2 --pair ignored: every pair of the classes drawn",
        "dataset_builder/from_kg.py",
        "    if asked:\n        return list(",
        "    if False:\n        return list(",
        _t9("test_from_kg_draws_the_classes_named_says_each_class_pair_and_takes_pairs"),
    ),
    Mutation(
        "§6.2 --pair one way round only",
        "dataset_builder/from_kg.py",
        "for x in ((a, b), (b, a))",
        "for x in ((a, b),)",
        _t9("test_from_kg_draws_the_classes_named_says_each_class_pair_and_takes_pairs"),
    ),
    Mutation(
        "§6.2 a named class in no record said nothing of",
        "dataset_builder/from_kg.py",
        "    return [c for c in classes if c not in present]",
        "    return []",
        _t9("test_from_kg_draws_the_classes_named_says_each_class_pair_and_takes_pairs"),
    ),
    Mutation(
        "§6.2 class pairs with no record left out of the counts",
        "dataset_builder/from_kg.py",
        '    return {k: got[k] for k in (f"{a}:{b}" for a, b in class_pairs(classes, asked))}',
        "    return dict(got)",
        _t9("test_from_kg_draws_the_classes_named_says_each_class_pair_and_takes_pairs"),
    ),
    Mutation(
        "§6.2 a --pair end outside --classes accepted",
        "dataset_builder/cli.py",
        "    missing = [c for p in asked for c in p if c not in wanted]",
        "    missing: list[str] = []",
        _t9("test_from_kg_pair_errors_are_one_line"),
    ),
    Mutation(
        "§6.3 records from-kg writes the kind kalma check does not read",
        "dataset_builder/cli.py",
        '    write_jsonl(output, drawn, "records", header)',
        '    write_jsonl(output, drawn, "relation_records", header)',
        _t9("test_check_takes_the_records_from_kg_writes_headerless_with_classes_and_the_former_kind"),
    ),
    Mutation(
        "§6.3 the kind's former name refused",
        "kalma/jsonl.py",
        'FORMER_KINDS.get(str(header.get("kind")), header.get("kind")) != kind',
        'header.get("kind") != kind',
        _t9("test_check_takes_the_records_from_kg_writes_headerless_with_classes_and_the_former_kind"),
    ),
    Mutation(
        "§6.3 records checked without their class_a/class_b columns",
        "kalma/schema.py",
        '    "records": RecordsLine,',
        '    "records": SeedRecord,',
        _t9("test_check_takes_the_records_from_kg_writes_headerless_with_classes_and_the_former_kind"),
    ),
    Mutation(
        "§6.3 a malformed class id in a records file passes kalma check",
        "kalma/schema.py",
        "            if c.strip() and not QID_RE.match(c.strip().upper()):",
        "            if False:",
        _t9("test_check_takes_the_records_from_kg_writes_headerless_with_classes_and_the_former_kind"),
    ),
    Mutation(
        "§6.4 records removed in silence",
        "dataset_builder/build.py",
        '        print(f"note: {note}", file=sys.stderr, flush=True)',
        "        pass",
        _t9("test_build_says_on_stderr_how_many_records_were_removed_why_and_the_first_line"),
    ),
    Mutation(
        "§6.4 the removal note names the last line of a reason, not the first",
        "dataset_builder/records.py",
        "    for r in sorted(removed, key=lambda r: r.line):\n        first.setdefault(r.reason, r)",
        "    for r in sorted(removed, key=lambda r: r.line):\n        first[r.reason] = r",
        _t9("test_build_says_on_stderr_how_many_records_were_removed_why_and_the_first_line"),
    ),
    Mutation(
        "§6.11 dumpgen counts records it did not write",
        "perf/dumpgen.py",
        '    if not args.records:  # no records were written: a count of them would say otherwise\n        del counts["records"]\n',
        "",
        _t9("test_dumpgen_counts_records_only_when_it_writes_them"),
    ),
    Mutation(
        "§6.10 answers of another dataset said as unknown entry ids",
        "evaluation/runner.py",
        "            if other := other_dataset(loaded.header, dataset, entry_list):",
        "            if other := None:",
        _t9("test_evaluate_says_the_answers_were_made_on_another_dataset_naming_both"),
    ),
    Mutation(
        "§6.10 an Inspect log's dataset not recorded",
        "kalma/inspect_log.py",
        '        "dataset": spec.dataset.location,',
        "",
        _t9("test_evaluate_says_an_inspect_log_was_made_on_another_dataset_naming_both"),
    ),
    Mutation(
        "§6.10 the dataset given named by its digest alone",
        "evaluation/runner.py",
        'f"{given} (digest {ours[:19]}…)"',
        'f"digest {ours[:19]}…"',
        _t9("test_evaluate_says_the_answers_were_made_on_another_dataset_naming_both"),
    ),
    Mutation(
        "§6.8 judge pairs records its KG as the user gave it (relative)",
        "evaluation/judge_cli.py",
        "    kg = absolute_spec(dataset_kg(dataset, kg, retrieving=False)[0])",
        "    kg = dataset_kg(dataset, kg, retrieving=False)[0]",
        _t9("test_judge_pairs_records_its_kg_absolute_with_its_digest"),
    ),
    Mutation(
        "§6.8 judge pairs records no KG digest",
        "evaluation/judge_cli.py",
        "provenance(config=config, kg_version=kg_version(kg))",
        "provenance(config=config)",
        _t9("test_judge_pairs_records_its_kg_absolute_with_its_digest"),
    ),
    Mutation(
        "§6.8 judge pairs records its dataset relative",
        "evaluation/judge_cli.py",
        'config = {"dataset": str(Path(dataset).resolve()), "kg": kg,',
        'config = {"dataset": dataset, "kg": kg,',
        _t9("test_judge_pairs_records_its_kg_absolute_with_its_digest"),
    ),
)
# issue 65 §1 (tests/unit/test_audit_65.py)
MUTATIONS += (
    Mutation(
        "a refused server first tried again after 5 s, not 0.5 s",
        "kalma/models/openai_backend.py",
        "        began, attempt, pause = time.monotonic(), 1, 0.5",
        "        began, attempt, pause = time.monotonic(), 1, 5.0",
        ("tests/unit/test_audit_65.py::test_a_refusing_server_is_tried_again_at_half_a_second_then_doubling_to_every_five",),
    ),
    Mutation(
        "a refused server's pauses capped at 10 s, not 5 s",
        "kalma/models/openai_backend.py",
        "attempt, pause = attempt + 1, min(pause * 2, 5.0)",
        "attempt, pause = attempt + 1, min(pause * 2, 10.0)",
        ("tests/unit/test_audit_65.py::test_a_refusing_server_is_tried_again_at_half_a_second_then_doubling_to_every_five",),
    ),
    Mutation(
        "§6.6 a judge whose replies are unreadable measured all the same",
        "evaluation/judge_quality.py",
        "    if pairs and out.by_word[1] / len(pairs) > UNUSABLE_LIMIT:",
        "    if False:",
        _t9("test_judge_evaluate_refuses_a_judge_whose_replies_are_mostly_unreadable"),
    ),
    Mutation(
        "§6.6 a judge refused at exactly half its replies unreadable",
        "evaluation/judge_quality.py",
        "    if pairs and out.by_word[1] / len(pairs) > UNUSABLE_LIMIT:",
        "    if pairs and out.by_word[1] / len(pairs) >= UNUSABLE_LIMIT:",
        _t9("test_judge_evaluate_refuses_a_judge_whose_replies_are_mostly_unreadable"),
    ),
    Mutation(
        "§6.6 a label spelling the docs list refused",
        "evaluation/judge_quality.py",
        '_NO = {"0", "false", "not_entailment", "not entailment", "unsupported", "no"}',
        '_NO = {"0", "false", "not_entailment", "unsupported", "no"}',
        _t9("test_every_label_spelling_the_docs_list_is_read_and_no_other"),
    ),
    Mutation(
        "§6.6 an undocumented label spelling accepted",
        "evaluation/judge_quality.py",
        '_YES = {"1", "true", "entailment", "entailed", "supported", "yes"}',
        '_YES = {"1", "true", "entailment", "entailed", "supported", "yes", "y"}',
        _t9("test_every_label_spelling_the_docs_list_is_read_and_no_other"),
    ),
    Mutation(
        "§6.7 a row comparable with no other ranked as a tie",
        "bench/leaderboard.py",
        "    ranked = [r for r in ranked if not r.unranked]\n",
        "",
        _t9("test_a_system_given_other_knowledge_is_not_ranked_as_a_tie_and_the_papers_people_only_beside_people"),
    ),
    Mutation(
        "§6.7 a row set apart without saying its knowledge differs",
        "bench/leaderboard.py",
        '"other knowledge" if any(KNOWLEDGE_DIFFERS in str(t) for t in whys) else',
        "",
        _t9("test_a_system_given_other_knowledge_is_not_ranked_as_a_tie_and_the_papers_people_only_beside_people"),
    ),
    Mutation(
        "§6.7 the paper's table of people beside any dataset",
        "bench/leaderboard.py",
        "    if release is None and (not groups or any(d.of_people() for d, _, _ in groups.values())):",
        "    if release is None:",
        _t9("test_a_system_given_other_knowledge_is_not_ranked_as_a_tie_and_the_papers_people_only_beside_people"),
    ),
    Mutation(
        "§6.7 a dataset's classes not recorded (every dataset taken for people)",
        "bench/records.py",
        '            classes=sorted({str(c) for e in entries for c in e.meta.get("classes") or () if c != "Q5"}),\n',
        "",
        _t9("test_a_system_given_other_knowledge_is_not_ranked_as_a_tie_and_the_papers_people_only_beside_people"),
    ),
    Mutation(
        "§6.5 the build's estimate shown from the first entry",
        "kalma/progress.py",
        "super().__init__(bar_format=fmt, **kwargs)",
        "super().__init__(**kwargs)",
        _t9("test_build_shows_the_rounds_moving_and_an_estimate_only_once_a_window_has_finished"),
    ),
    Mutation(
        "§6.5 the rounds inside a window said nothing of",
        "dataset_builder/build.py",
        "for outcome in interleave(entries, scorer, window, step):",
        "for outcome in interleave(entries, scorer, window):",
        _t9("test_build_shows_the_rounds_moving_and_an_estimate_only_once_a_window_has_finished"),
    ),
    Mutation(
        "§6.5 no estimate even once a window has finished",
        "kalma/progress.py",
        "        self.bar_format = None  # tqdm's own, with its estimate\n",
        "        pass\n",
        _t9("test_build_shows_the_rounds_moving_and_an_estimate_only_once_a_window_has_finished"),
    ),
    Mutation(
        "§6.5 a model's batches said nothing of (the evaluator silent until a chunk is scored)",
        "kalma/models/base.py",
        "        batch_done(namespace, finished, len(todo))",
        "        pass",
        _t9("test_answer_and_evaluate_say_in_a_log_how_many_prompts_are_done_as_the_models_batches_finish"),
    ),
    Mutation(
        "§6.5 a batch's decoding steps said nothing of (the demo silent for minutes)",
        "kalma/models/shared_prefix.py",
        "        token_done(len(self.tokens), self.most, len(token))",
        "        pass",
        _t9("test_answer_and_evaluate_say_in_a_log_how_many_prompts_are_done_as_the_models_batches_finish"),
    ),
    Mutation(
        "§6.5 an estimate from inside a model's first batch",
        "baselines/pipeline.py",
        'Progress(len(jobs), f"answer: {desc or cfg.llm}", "answer", enabled=progress, settles=None)',
        'Progress(len(jobs), f"answer: {desc or cfg.llm}", "answer", enabled=progress)',
        _t9("test_answer_and_evaluate_say_in_a_log_how_many_prompts_are_done_as_the_models_batches_finish"),
    ),
    Mutation(
        "§6.5 a terminal's bar never settling on the model's first batch",
        "kalma/progress.py",
        "            self.bar.settle()\n",
        "",
        _t9("test_answer_draws_a_bar_on_a_terminal_with_an_estimate_once_the_models_first_batch_has_finished"),
    ),
    Mutation(
        "§6.5 a log flooded with a line per batch",
        "kalma/progress.py",
        " or (not now and time.monotonic() - self.logged < self.every):",
        ":",
        _t9("test_answer_and_evaluate_say_in_a_log_how_many_prompts_are_done_as_the_models_batches_finish"),
    ),
    Mutation(
        "§6.5 progress printed to stdout",
        "kalma/progress.py",
        "        print(line, file=sys.stderr, flush=True)",
        "        print(line, flush=True)",
        _t9("test_progress_leaves_stdout_and_the_answers_as_they_were"),
    ),
    Mutation(
        "§6.5 progress though the caller asked for none",
        "kalma/progress.py",
        "        self.plain = enabled and not sys.stderr.isatty()",
        "        self.plain = not sys.stderr.isatty()",
        _t9("test_progress_leaves_stdout_and_the_answers_as_they_were"),
    ),
    Mutation(
        "§6.14 several judges: only the first two compared",
        "evaluation/judge_quality.py",
        "for i in range(len(reports)) for j in range(i + 1, len(reports))}",
        "for i in range(1) for j in range(1, 2)}",
        _t9("test_judge_evaluate_takes_three_judges_with_every_pairs_difference_and_a_ranking"),
    ),
    Mutation(
        "§6.14 the judges ranked worst first",
        "evaluation/judge_quality.py",
        "    order = sorted(range(len(reports)), key=lambda i: -point(i))",
        "    order = sorted(range(len(reports)), key=lambda i: point(i))",
        _t9("test_judge_evaluate_takes_three_judges_with_every_pairs_difference_and_a_ranking"),
    ),
    Mutation(
        "§6.15 a judge.json's negated accuracy never read: every row says its judge was not measured",
        "bench/leaderboard.py",
        'kind = j.get("accuracy_by_kind", {}).get("negated")',
        'kind = j.get("accuracy_by_kind", {}).get("paraphrase")',
        _t9("test_the_board_says_when_its_alignment_judge_was_never_measured_on_negated_pairs_and_its_figure_once_it_was"),
    ),
    Mutation(
        "§6.15 a row's alignment judge unmeasured on negated pairs said nothing of",
        "bench/leaderboard.py",
        '    spec = s.judges.get("nli", {}).get("spec")\n',
        '    spec = s.judges.get("judge", {}).get("spec")\n',
        _t9("test_the_board_says_when_its_alignment_judge_was_never_measured_on_negated_pairs_and_its_figure_once_it_was"),
    ),
    Mutation(
        "§6.15 a judge note every row shares said in each row's Read first (rows too tall for 1,400 px)",
        "bench/leaderboard.py",
        "    if len(found) == 1:\n        return found.pop()",
        "    if False:\n        return found.pop()",
        ("tests/e2e/test_model_failures.py::test_answers_that_cite_nothing_are_said_first_and_on_the_board",),
    ),
)
