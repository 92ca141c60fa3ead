"""Datasets of any class (kalma/classes.py, the builder, the KG sources' class look-up): each broken
the way a people-only assumption creeps back in."""

from __future__ import annotations

from . import Mutation

TESTS = "tests/e2e/test_classes.py"

MUTATIONS = (
    Mutation(
        "the complete-name rule back on every class",
        "dataset_builder/records.py",
        "        if any(entity_class(c).person for c in end) and (problem := name_problem(name)):",
        "        if problem := name_problem(name):",
        (TESTS,),
    ),
    Mutation(
        "the subclass walk dropped from the SPARQL sources",
        "kalma/kg/sparql.py",
        'INSTANCE_OF = "wdt:P31/wdt:P279*"',
        'INSTANCE_OF = "wdt:P31"',
        (f"{TESTS}::test_class_lookup_takes_subclasses_on_every_source_as_the_server_does",),
    ),
    Mutation(
        "the subclass walk dropped from the local Wikidata",
        "kalma/kg/store.py",
        "WHERE w.pid = 'P279' AND w.value_type = 'item'\"",
        "WHERE w.pid = 'P279' AND false\"",
        (f"{TESTS}::test_class_lookup_takes_subclasses_on_every_source_as_the_server_does",),
    ),
    Mutation(
        '"Who was" asked of a city (every entity taken for a person in the questions)',
        "dataset_builder/evolve.py",
        "    nouns = None if all(c.person for c in classes) else [c.noun_in(language) for c in classes]",
        "    nouns = None",
        (TESTS,),
    ),
    Mutation(
        "a class's trivial relations ignored (a person's applied to every entity)",
        "dataset_builder/evolve.py",
        "        return of.get(t.subject, classes[0]).is_trivial(t)",
        "        return HUMAN.is_trivial(t)",
        (TESTS,),
    ),
    Mutation(
        "people's statistics shown as zeros for a dataset with no person",
        "dataset_builder/stats.py",
        "for key, label in ROWS if people or key not in OF_PEOPLE]",
        "for key, label in ROWS]",
        (f"{TESTS}::test_records_from_the_kg_build_a_dataset_of_organizations_and_cities",),
    ),
    Mutation(
        "a property's type constraints ignored (its records looked up in any class)",
        "dataset_builder/build.py",
        "    constrained = constrain(source, selection)\n",
        "    constrained: dict[str, dict[str, list[str]]] = {}\n",
        (f"{TESTS}::test_records_without_classes_take_their_propertys_type_constraints",),
    ),
    Mutation(
        "a constraint's class with no instance in the KG restricts the look-up",
        "dataset_builder/build.py",
        '[c for c in cs if status[c] == "has instances"]',
        "list(cs)",
        (f"{TESTS}::test_records_without_classes_take_their_propertys_type_constraints",),
    ),
    Mutation(
        "subject-type and value-type constraints given to the wrong ends",
        "dataset_builder/build.py",
        '(("class_a", "subject"), ("class_b", "value"))',
        '(("class_a", "value"), ("class_b", "subject"))',
        (f"{TESTS}::test_records_without_classes_take_their_propertys_type_constraints",),
    ),
    Mutation(
        "the type constraints' query reads the statement's value, not its qualifier",
        "kalma/kg/sparql.py",
        "?prop p:P2302 ?st . ?st ps:P2302 ?constraint ; pq:P2308 ?cls .",
        "?prop p:P2302 ?st . ?st ps:P2302 ?constraint ; ps:P2302 ?cls .",
        (f"{TESTS}::test_records_without_classes_take_their_propertys_type_constraints",),
    ),
)
# issue 65 §1 (tests/e2e/test_audit_65.py)
FROM_KG = "dataset_builder/from_kg.py"
DRAWN = "tests/e2e/test_audit_65.py::test_records_from_kg_draw_each_pair_once_never_a_shared_name_nor_a_trivial_fact"
MUTATIONS += (
    Mutation(
        "records from-kg keeping a pair and its reverse apart",
        FROM_KG,
        "                key = (p, *sorted((a, b)))",
        "                key = (p, a, b)",
        (DRAWN,),
    ),
    Mutation(
        "records from-kg drawn at seed 0 whatever --seed says",
        FROM_KG,
        "    rng = random.Random(seed)",
        "    rng = random.Random(0)",
        ("tests/e2e/test_audit_65.py::test_records_from_kg_follow_the_seed",),
    ),
    Mutation(
        "records from-kg naming a record by a name two entities share",
        FROM_KG,
        "    unique = {q for q, name in names.items() if name != q and hits.get(name) == [q]}",
        "    unique = {q for q, name in names.items() if name != q}",
        (DRAWN,),
    ),
    Mutation(
        "records from-kg drawing a class's trivial relation as a record's link",
        FROM_KG,
        '        links = [p for p in properties if not entity_class(ca).trivial_relation(p, labels.get(p, ""))]',
        "        links = list(properties)",
        ("tests/e2e/test_audit_65.py::test_records_from_kg_never_draw_a_class_s_trivial_relation_as_a_link",),
    ),
    Mutation(
        "records from-kg stating a class's trivial relations in a paragraph",
        FROM_KG,
        "and has_label(t) and not entity_class(c).is_trivial(t)]",
        "and has_label(t)]",
        (DRAWN,),
    ),
)
MUTATIONS += (
    Mutation(
        "a record of a person and an organization given the paper's person prompts",
        "dataset_builder/evolve.py",
        "    nouns = None if all(c.person for c in classes) else [c.noun_in(language) for c in classes]",
        "    nouns = None if any(c.person for c in classes) else [c.noun_in(language) for c in classes]",
        ("tests/e2e/test_audit_65.py::test_a_record_of_an_organization_and_a_person_gets_the_class_neutral_prompts",),
    ),
)
