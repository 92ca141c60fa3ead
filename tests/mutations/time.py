"""Datasets over time (docs/time.md): two dumps compared (`kalma kg diff`) and the redirects a dump
holds; a dataset checked and refreshed against a newer KG, fresh entries, outdated claims; each
broken the way a wrong rule would be."""

from __future__ import annotations

from . import Mutation

DIFF = "tests/e2e/test_kg_diff.py"
FRESHNESS = "tests/e2e/test_dataset_freshness.py"

MUTATIONS = (
    # ---------------------------------------------------------------- kg diff and the redirects
    Mutation(
        "the redirect dropped by the columnar parser (owl:sameAs lines never reach its columns)",
        "kalma/kg/columnar.py",
        "[nt.CLAIM, PROPERTY_TYPE, DIRECT, SAME_AS, *(f'\"@{lang}' for lang in languages)]",
        "[nt.CLAIM, PROPERTY_TYPE, DIRECT, *(f'\"@{lang}' for lang in languages)]",
        ("tests/unit/test_ntriples_fuzz.py", f"{DIFF}::test_the_import_keeps_the_redirects_and_a_store_made_before_them_still_opens"),
    ),
    Mutation(
        "an owl:sameAs from an IRI that is no Wikidata entity (`<P31>`) read as a redirect by the pattern parser",
        "kalma/kg/dumps.py",
        "            elif target and sid != subject.decode():",
        "            elif target:",
        ("tests/unit/test_ntriples_fuzz.py",),
    ),
    Mutation(
        "a store imported before the redirects table refused",
        "kalma/kg/store.py",
        "    if not files and table in OPTIONAL:",
        "    if False:",
        (f"{DIFF}::test_the_import_keeps_the_redirects_and_a_store_made_before_them_still_opens",),
    ),
    Mutation(
        "a changed value treated as a removal plus an addition (the two sides never joined)",
        "kalma/kg/diff.py",
        "FULL OUTER JOIN added ON removed.subject = added.subject AND removed.pid = added.pid;",
        "FULL OUTER JOIN added ON false;",
        (f"{DIFF}::test_kg_diff_finds_exactly_the_changes_the_generator_listed",),
    ),
    Mutation(
        "a merged item counted as deleted",
        "kalma/kg/diff.py",
        "SELECT 'merged', subject, NULL, []::VARCHAR[], [target], NULL, NULL FROM merged",
        "SELECT 'deleted', subject, NULL, []::VARCHAR[], []::VARCHAR[], NULL, NULL FROM merged",
        (f"{DIFF}::test_kg_diff_finds_exactly_the_changes_the_generator_listed",),
    ),
    Mutation(
        "a label change missed (only aliases and descriptions compared)",
        "kalma/kg/diff.py",
        "SELECT 'label', id, NULL, old, new, lang, kind FROM label_changes",
        "SELECT 'label', id, NULL, old, new, lang, kind FROM label_changes WHERE kind <> 'label'",
        (f"{DIFF}::test_kg_diff_finds_exactly_the_changes_the_generator_listed",),
    ),
    # ---------------------------------------------------------------- dataset check and refresh
    Mutation(
        "a stale entry kept as valid (findings that leave it rebuildable ignored)",
        "dataset_builder/freshness.py",
        '    return "stale" if findings else "valid"',
        '    return "valid"',
        (f"{FRESHNESS}::test_check_names_exactly_the_entries_the_changes_touched",),
    ),
    Mutation(
        "a changed value checked as a removal (the fact's successor not looked for)",
        "dataset_builder/freshness.py",
        "    if successors:\n",
        "    if False:\n",
        (f"{FRESHNESS}::test_check_names_exactly_the_entries_the_changes_touched",),
    ),
    Mutation(
        "refreshed entries renumbered (their records rebuilt at other lines)",
        "dataset_builder/freshness.py",
        '"".join((dumps(rows[n], ensure_ascii=False) if n in rows else "") + "\\n" for n in range(1, max(rows) + 1))',
        '"".join(dumps(rows[n], ensure_ascii=False) + "\\n" for n in sorted(rows))',
        (f"{FRESHNESS}::test_refresh_keeps_valid_entries_byte_for_byte_and_a_second_refresh_changes_nothing",),
    ),
    Mutation(
        "an outdated claim not counted when uncited (citations alone read)",
        "evaluation/outdated.py",
        "                found = by_citation | {ti for ti in range(len(stale[i])) if (i, si, ti) in stated}",
        "                found = by_citation",
        (f"{FRESHNESS}::test_answers_from_the_old_kg_count_their_outdated_claims_exactly",),
    ),
    Mutation(
        "--changed-since keeping unchanged links (OLD's links not left out)",
        "dataset_builder/from_kg.py",
        "        return {x for x in links if (x in held) != changed}",
        "        return set(links)",
        (f"{FRESHNESS}::test_changed_since_records_only_new_or_changed_links_and_figures_come_per_split",),
    ),
    Mutation(
        "a split's figures computed over every answer (the bootstrap not restricted to the split)",
        "evaluation/runner.py",
        "        mine = [r for r in rows if split_of.get(r.entry_id) == split]",
        "        mine = list(rows)",
        (f"{FRESHNESS}::test_changed_since_records_only_new_or_changed_links_and_figures_come_per_split",),
    ),
    Mutation(
        "a diff between other KGs taken for the dataset's (the digests never compared)",
        "dataset_builder/freshness.py",
        "        if not same_kg(theirs, ours):",
        "        if False:",
        (f"{FRESHNESS}::test_check_and_refresh_with_the_diff_between_the_two_dumps_say_what_they_say_without_it",),
    ),
    Mutation(
        "with --diff, the entries it touches taken as valid too (no entry asked about)",
        "dataset_builder/freshness.py",
        '        touched = {c["subject"] for c in diff}',
        "        touched: set[str] = set()",
        (f"{FRESHNESS}::test_check_and_refresh_with_the_diff_between_the_two_dumps_say_what_they_say_without_it",),
    ),
    Mutation(
        "a refreshed dataset's check saying it was built on the KG it was refreshed for",
        "dataset_builder/freshness.py",
        "if refreshed and built else",
        "if False else",
        (f"{FRESHNESS}::test_the_check_of_a_refreshed_dataset_says_what_it_was_refreshed_for_and_from",),
    ),
    Mutation(
        "a merged entity shown with the bare id of the item it went into (its label not asked)",
        "dataset_builder/freshness.py",
        'new_label=into.get(moved[q], "")',
        'new_label=""',
        (f"{FRESHNESS}::test_a_merged_entity_is_shown_with_the_label_of_the_item_it_went_into",),
    ),
    Mutation(
        "the outdated metric naming the previous KG by its spec alone (no dump date, no digest)",
        "evaluation/outdated.py",
        'kg = describe(kg_version(self.previous_kg)) if self.previous_kg else "(none given)"',
        'kg = self.previous_kg or "(none given)"',
        (f"{FRESHNESS}::test_the_outdated_metric_names_the_previous_kg_by_its_dump_date_and_digest",),
    ),
    Mutation(
        "a refresh made with --diff that does not say which diff it used",
        "dataset_builder/freshness.py",
        '"changelog": changelog.name, **used, **provenance',
        '"changelog": changelog.name, **provenance',
        (f"{FRESHNESS}::test_check_and_refresh_with_the_diff_between_the_two_dumps_say_what_they_say_without_it",),
    ),
    Mutation(
        "a refreshed dataset answered from its build's KG (the values it no longer states retrieved)",
        "baselines/cli.py",
        '(recorded, config.get("kg"), made.get("kg"))',
        '(config.get("kg"), made.get("kg"))',
        (f"{FRESHNESS}::test_a_refreshed_dataset_is_answered_from_the_kg_it_was_refreshed_for",),
    ),
    Mutation(
        "a missing store read for its identity as a raw file error (check and refresh)",
        "kalma/kg/version.py",
        "        meta = read_meta(Path(argument))",
        '        meta = __import__("json").loads((Path(argument) / "meta.json").read_text())',
        (f"{FRESHNESS}::test_bad_input_ends_in_one_line",),
    ),
    Mutation(
        "a build recording its paths as given (relative: answered or refreshed from another folder, the KG is not found)",
        "dataset_builder/build.py",
        '        config={**config, "records": str(Path(records).resolve()), **named},',
        "        config=config,",
        (f"{FRESHNESS}::test_a_dataset_built_with_relative_paths_is_refreshed_and_answered_from_another_folder",),
    ),
    Mutation(
        "an evaluation naming the KG its dataset was built on, not the one it was refreshed for",
        "kalma/kg/version.py",
        '    found = (refreshed.get("kg_version") if isinstance(refreshed, dict) else None) or made.get("kg_version")',
        '    found = made.get("kg_version")',
        (f"{FRESHNESS}::test_answers_from_the_old_kg_count_their_outdated_claims_exactly",),
    ),
    Mutation(
        "Ctrl-C during a refresh's check said as a bare interruption (only the rebuild's own message replaced)",
        "dataset_builder/freshness.py",
        "    except KeyboardInterrupt:  # the rebuild's own message",
        "    except Interrupted:  # the rebuild's own message",
        (f"{FRESHNESS}::test_ctrl_c_on_a_refresh_says_nothing_was_written_and_how_to_go_on",),
    ),
    Mutation(
        "a dataset built from --changed-since records not saying since which KG",
        "dataset_builder/build.py",
        "        **records_changed_since(records),  # the older KG its `changed` split is new since\n",
        "",
        (f"{FRESHNESS}::test_changed_since_records_only_new_or_changed_links_and_figures_come_per_split",),
    ),
    Mutation(
        "the per-split table saying 'the previous KG' whatever the dataset names",
        "evaluation/runner.py",
        '    older = describe(since) if isinstance(since, dict) and since.get("spec") else "the previous KG"',
        '    older = "the previous KG"',
        (f"{FRESHNESS}::test_changed_since_records_only_new_or_changed_links_and_figures_come_per_split",),
    ),
    Mutation(
        "a refresh that dropped every entry (another KG) said as a plain success",
        "dataset_builder/cli.py",
        '    if c["dropped"] and not c["kept"] + c["rebuilt"]:',
        '    if c["dropped"] and c["kept"] + c["rebuilt"]:',
        (f"{FRESHNESS}::test_bad_input_ends_in_one_line",),
    ),
    Mutation(
        "kalma dataset demo naming its KG as given and not its version (evaluations say 'a KG its header does not name')",
        "dataset_builder/cli.py",
        '    made = provenance(source="kalma demo questions", kg=whole, kg_version=kg_version(whole))',
        '    made = provenance(source="kalma demo questions", kg=kg)',
        ("tests/e2e/test_first_contact_9.py::test_judge_pairs_records_its_kg_absolute_with_its_digest",),
    ),
)
