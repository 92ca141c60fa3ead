"""The citation markup of kalma-spec: every listed hard case, round trips, and a fuzz test."""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kalma.citations import Citation, format_citations, format_sentence, parse_answer, parse_citations

C = Citation


def test_basic_blocks_and_entity_name():
    cits, errs = parse_citations("[Q212657, place of birth: Rome, occupation: painter] [Q367360, Orazio Gentileschi, occupation: painter]")
    assert errs == []
    assert cits == [C("Q212657", "place of birth", "Rome"), C("Q212657", "occupation", "painter"), C("Q367360", "occupation", "painter")]
    assert cits[2].entity_name == "Orazio Gentileschi"


def test_qid_prefix_and_name_pair_of_the_papers_format():
    # the paper's demonstration style: `name:` is a fact of the KG, cited like any other
    cits, errs = parse_citations("[qid: Q212657, name: Artemisia Gentileschi, place of birth: Rome]")
    assert errs == [] and cits == [C("Q212657", "name", "Artemisia Gentileschi"), C("Q212657", "place of birth", "Rome")]
    assert cits[1].entity_name == "Artemisia Gentileschi"


def test_value_with_comma_and_colon_stays_whole_when_the_kg_holds_it():
    from kalma.properties import Vocabulary
    from kalma.schema import Triple

    facts = [("place of birth", "Washington, D.C."), ("occupation", "painter"), ("notable work", "Love, Death: Robots")]
    vocab = Vocabulary.of([Triple(subject="Q1", relation="", relation_label=r, value=v, value_label=v) for r, v in facts])
    text = "[Q1, place of birth: Washington, D.C., occupation: painter, notable work: Love, Death: Robots]"
    cits, errs = parse_citations(text, vocab)
    assert errs == []
    assert [c.value for c in cits] == ["Washington, D.C.", "painter", "Love, Death: Robots"]
    # without that value in the KG, `Death: Robots` reads as a pair of its own
    cits, _ = parse_citations(text, ["place of birth", "occupation", "notable work"])
    assert [(c.relation, c.value) for c in cits][-2:] == [("notable work", "Love"), ("Death", "Robots")]


def test_value_with_colon():
    cits, _ = parse_citations("[Q1, notable work: Hitman: My Real Life]", ["notable work"])
    assert cits == [C("Q1", "notable work", "Hitman: My Real Life")]
    # without a vocabulary the first colon still separates relation from value
    assert parse_citations("[Q1, notable work: Hitman: My Real Life]")[0] == cits


def test_comma_in_value_without_vocabulary_keeps_bare_pieces():
    cits, errs = parse_citations("[Q1, place of birth: Washington, D.C., occupation: painter]")
    assert errs == [] and [c.value for c in cits] == ["Washington, D.C.", "painter"]


def test_several_qids_in_one_bracket():
    cits, errs = parse_citations("[Q1, spouse: X, Q2, Bob, child: Y, qid: Q3, name: Z, father: W]")
    assert errs == []
    assert [(c.qid, c.relation, c.value) for c in cits] == [("Q1", "spouse", "X"), ("Q2", "child", "Y"), ("Q3", "name", "Z"), ("Q3", "father", "W")]
    assert cits[1].entity_name == "Bob" and cits[3].entity_name == "Z"


def test_na_variants():
    a = parse_answer("One [NA]. Two [N/A]. Three [na]. Four [ n / a ].")
    assert [s.na for s in a.sentences] == [True, True, True, True]
    assert a.na_count == 4 and a.errors == []


def test_bracket_spanning_a_line_break():
    a = parse_answer("He was born in Rome [Q1, place of\nbirth: Rome, occupation:\n painter]. Next.")
    assert a.sentences[0].citations == [C("Q1", "place of birth", "Rome"), C("Q1", "occupation", "painter")]
    assert len(a.sentences) == 2


def test_citation_after_full_stop_belongs_to_previous_sentence():
    a = parse_answer("She was born in Rome. [Q1, place of birth: Rome] She died in Naples. [Q1, place of death: Naples][NA]")
    assert [s.clean for s in a.sentences] == ["She was born in Rome.", "She died in Naples."]
    assert a.sentences[0].citations == [C("Q1", "place of birth", "Rome")]
    assert a.sentences[1].citations == [C("Q1", "place of death", "Naples")] and a.sentences[1].na


def test_sentence_ends_after_citation_and_na_but_not_after_title():
    a = parse_answer("He lived in the [Q1, country: USA]. He met Dr. Smith [NA]. He left.")
    assert [s.clean for s in a.sentences] == ["He lived in the.", "He met Dr. Smith.", "He left."]
    a = parse_answer("It was unknown [NA]. He went home.")
    assert [s.clean for s in a.sentences] == ["It was unknown.", "He went home."]


LISTS = {
    "dashes": "- Born in Rome [Q1, place of birth: Rome]\n- Died in Naples [Q1, place of death: Naples]\n- Liked cats [NA]",
    "bullets after an intro": "Here is what the graph says:\n• Born in Rome [Q1, place of birth: Rome]\n"
    "• Died in Naples [Q1, place of death: Naples]\n• Liked cats [NA]",
    "numbered, no stops": "1. Born in Rome [Q1, place of birth: Rome]\n2) Died in Naples [Q1, place of death: Naples]\n(3) Liked cats [NA]",
    "numbered, with stops": "1. Born in Rome [Q1, place of birth: Rome].\n2. Died in Naples [Q1, place of death: Naples].\n3. Liked cats [NA].",
    "numbered inline": "1. Born in Rome [Q1, place of birth: Rome]. 2. Died in Naples [Q1, place of death: Naples]. 3. Liked cats [NA].",
    "lines ending in citations": "Born in Rome [Q1, place of birth: Rome]\nDied in Naples [Q1, place of death: Naples]\nLiked cats [NA]",
    "Windows line ends": "Born in Rome [Q1, place of birth: Rome]\r\nDied in Naples [Q1, place of death: Naples]\r\nLiked cats [NA]",
    "citations after the stop": "- Born in Rome. [Q1, place of birth: Rome]\n- Died in Naples. [Q1, place of death: Naples]\n- Liked cats. [NA]",
}


@pytest.mark.parametrize("style", sorted(LISTS))
def test_list_items_are_sentences_as_models_write_them(style):
    a = parse_answer(LISTS[style])
    claims = [s for s in a.sentences if s.citations or s.na]  # an intro line is a sentence with neither
    assert [s.clean.rstrip(".") for s in claims] == ["Born in Rome", "Died in Naples", "Liked cats"]
    assert [[c.relation for c in s.citations] for s in claims] == [["place of birth"], ["place of death"], []]
    assert [s.na for s in claims] == [False, False, True]
    assert len(a.sentences) == 3 + style.startswith("bullets")


def test_a_wrapped_line_is_not_a_list():
    a = parse_answer("She was born in Rome [Q1, place of birth: Rome]\nand died in Naples [NA].\nShe was\n2 metres tall.")
    assert [s.clean for s in a.sentences] == ["She was born in Rome and died in Naples.", "She was 2 metres tall."]
    assert parse_answer("Born in Rome ([Q1, place of birth: Rome]).").sentences[0].clean == "Born in Rome."


def test_the_prompts_knowledge_line_copied_into_a_bracket_is_a_citation():
    a = parse_answer(
        "Born in Rome [Q1 | Artemisia Gentileschi | place of birth | Rome]. "
        "A painter [Q1 | occupation | painter; Q2 | Orazio | occupation | painter\nQ2 | Orazio | place of birth | Pisa]. "
        "Odd [Q1 | Rome] [Q1 | A | b | c | d] [Q1 | A | place of birth | ]."
    )
    s1, s2, s3 = a.sentences
    assert s1.citations == [C("Q1", "place of birth", "Rome")] and s1.citations[0].entity_name == "Artemisia Gentileschi"
    assert s2.citations == [C("Q1", "occupation", "painter"), C("Q2", "occupation", "painter"), C("Q2", "place of birth", "Pisa")]
    assert s3.citations == [] and [e.kind for e in s3.errors] == ["pipe_fields", "pipe_fields", "empty_value"]


def test_a_colon_after_the_qid_and_quoted_pairs():
    assert parse_citations("[Q1: place of birth: Rome]")[0] == [C("Q1", "place of birth", "Rome")]
    assert parse_citations('[Q1, "place of birth": "Rome", \'occupation\': “painter”]')[0] == [
        C("Q1", "place of birth", "Rome"),
        C("Q1", "occupation", "painter"),
    ]
    from kalma.properties import Vocabulary
    from kalma.schema import EntityGraph, Triple

    quoted = '"Hello, World"'  # a value that really has its quotes is read with them
    g = EntityGraph(qid="Q1", label="A", triples=[Triple(subject="Q1", relation="P1476", relation_label="title", value=quoted, value_label=quoted)])
    assert parse_citations(f"[Q1, title: {quoted}]", Vocabulary.of(g))[0] == [C("Q1", "title", quoted)]


def test_dotted_acronyms_do_not_split():
    a = parse_answer("He played for S.S. Lazio [Q1, member of sports team: S.S. Lazio]. He left.")
    assert [s.clean for s in a.sentences] == ["He played for S.S. Lazio.", "He left."]


def test_initials_and_lowercase_continuations_do_not_split():
    a = parse_answer("J. R. R. Tolkien wrote books, e.g. The Hobbit. He taught at Oxford.")
    assert len(a.sentences) == 2


def test_malformed_brackets_are_counted_not_dropped():
    a = parse_answer("Died [Q1, date of death: ]. Odd [sic]. Empty []. Open [Q1, x: y")
    kinds = sorted(e.kind for e in a.errors)
    assert kinds == ["empty_bracket", "empty_value", "no_qid", "unclosed"]
    assert [len(s.errors) for s in a.sentences] == [1, 1, 1, 1]


def test_stray_closing_bracket_is_an_error():
    a = parse_answer("Fine]. Next.")
    assert [e.kind for e in a.errors] == ["unopened"]


def test_clean_text_is_the_premise():
    a = parse_answer("Artemisia was born in Rome [Q212657, place of birth: Rome] in 1593 [NA].")
    assert a.sentences[0].clean == "Artemisia was born in Rome in 1593."


def test_format_sentence_places_marks_before_the_stop():
    s = format_sentence("He was born in Rome.", [C("Q1", "place of birth", "Rome")], na=True)
    assert s == "He was born in Rome [Q1, place of birth: Rome][NA]."
    a = parse_answer(s)
    assert a.sentences[0].citations == [C("Q1", "place of birth", "Rome")] and a.sentences[0].na


def test_unknown_label_is_its_own_citation_not_part_of_the_value_before_it():
    cits, errs = parse_citations("[Q212657, place of birth: Rome, favourite colour: red]", ["place of birth"])
    assert errs == [] and cits == [C("Q212657", "place of birth", "Rome"), C("Q212657", "favourite colour", "red")]


def test_known_label_holding_a_comma():
    cits, errs = parse_citations("[Q1, occupation: painter, languages spoken, written or signed: Italian, French]")
    assert errs == []
    assert [(c.relation, c.value) for c in cits] == [("occupation", "painter"), ("languages spoken, written or signed", "Italian, French")]


@pytest.mark.parametrize(
    "text,kinds,n",
    [
        ("[Q212657]", ["no_pair"], 0),
        ("[Q212657, Artemisia Gentileschi]", ["no_pair"], 0),
        ("[Q212657, Artemisia Gentileschi, place of birth: Rome, ]", ["trailing_separator"], 1),
        ("[Q1, occupation: painter, Q2]", ["no_pair"], 1),
        ("[Q1, occupation: painter,, movement: x]", ["empty_piece"], 2),
        ("[Q1, : painter]", ["empty_relation"], 0),
        ("[Q1, date of death: ]", ["empty_value"], 0),
    ],
)
def test_nothing_is_dropped_silently(text, kinds, n):
    cits, errs = parse_citations(text)
    assert sorted(e.kind for e in errs) == kinds and len(cits) == n


def test_every_error_kind_is_documented():
    from kalma.citations import KINDS

    a = parse_answer("[Q1] [Q1, x: y, ] [Q1, x: y,, z: w] [Q1, : v] [Q1, x: ] [] [sic] [Q1 | y] ] [Q1, x: [y]] [Q1, x: y")
    assert {e.kind for e in a.errors} == set(KINDS) - {"too_much_markup"}  # that one: test_parser.py


def test_property_identity_of_aliases_and_release_keys():
    from kalma.properties import Vocabulary

    v = Vocabulary.builtin()
    same = ["date of birth", "date_of_birth", "Date Of Birth", "P569", "birth date"]
    assert {v.citation_key("Q1", r, "1563-07-19") for r in same} == {("Q1", "P569", "1563-07-19")}
    assert v.identity("languages spoken") == v.identity("languages spoken, written or signed") == "P1412"
    assert v.identity("notable works") == v.identity("notable work") == "P800"
    assert v.identity("alma mater") == v.identity("educated at") == "P69"
    # values are never loosened
    assert v.citation_key("Q1", "occupation", "Painter") != v.citation_key("Q1", "occupation", "painter")


def test_the_kg_outranks_the_built_in_table():
    from kalma.properties import Vocabulary
    from kalma.schema import EntityGraph, Triple

    g = EntityGraph(
        qid="Q1",
        label="A",
        property_aliases={"P9999": ["occupation"]},
        triples=[Triple(subject="Q1", relation="P9999", relation_label="trade", value="x", value_label="x")],
    )
    v = Vocabulary.of(g)
    assert v.identity("trade") == "P9999"
    assert v.identity("occupation") == "P106"  # an alias never beats a built-in label...
    g2 = g.model_copy(update={"triples": [Triple(subject="Q1", relation="P9999", relation_label="occupation", value="x", value_label="x")]})
    assert Vocabulary.of(g2).identity("occupation") == "P9999"  # ...but the KG's own label does


# ---------------------------------------------------------------- properties

_label_chars = string.ascii_lowercase + " "
labels = st.text(_label_chars, min_size=1, max_size=15).map(lambda s: " ".join(s.split())).filter(lambda s: s and s not in {"name", "qid"})
values = st.text(
    alphabet=st.sampled_from(list(string.ascii_letters + string.digits + " ,:;'\"[]\\-./()") + list("éüßЖжΩ東京中文العربية")),
    min_size=1,
    max_size=30,
).map(lambda s: " ".join(s.split()))


def _writable(value: str) -> bool:
    """Values no markup can tell apart from structure: empty, starting or ending with a comma,
    two commas with nothing between, or a QID standing alone after a comma."""
    import re

    v = value.strip()
    return (
        bool(v)
        and not v.endswith(",")
        and not v.startswith(",")
        and not re.search(r",\s*,", v)
        and not re.search(r",\s*(?:qid\s*:\s*)?q\d+\s*(?:,|$)", v, re.I)
    )


# Property names a model may write for a fact: the label, an alias, a release key, odd casing.
NAMES = {pid: names for pid, names in __import__("kalma.properties", fromlist=["PROPERTIES"]).PROPERTIES.items()}


# The strategies the composites draw from, built once: hypothesis analyses a filtered text
# strategy each time one is built, and building them per draw was most of the tests' time.
writable = values.filter(_writable)
bare_names = writable.filter(lambda v: ":" not in v and not any(re.fullmatch(r"q\d+", p.strip(), re.I) for p in v.split(",")))
unquoted = writable.filter(lambda v: ":" not in v and "," not in v and not (len(v) > 1 and v[0] == v[-1] and v[0] in "'\""))
pids = st.sampled_from(sorted(NAMES))
styles = st.sampled_from(["as is", "title", "upper", "underscores"])
leads = st.sampled_from(["none", "bare name", "name pair"])
line_breaks = st.sampled_from(["; ", "\n"])


def _spelling(draw, name: str) -> str:
    style = draw(styles)
    return {"as is": name, "title": name.title(), "upper": name.upper(), "underscores": name.replace(" ", "_")}[style]


@st.composite
def graphs_and_answers(draw):
    """A random KG (built-in and KG-only properties, values with `, ` and `: `) and an answer
    citing some of its facts, entity names and facts it lacks, in every style a model writes."""
    from kalma.properties import Vocabulary
    from kalma.schema import EntityGraph, KnowledgeGraph, Triple

    qids = draw(st.lists(st.integers(1, 10**6), min_size=1, max_size=3, unique=True).map(lambda xs: [f"Q{x}" for x in xs]))
    own_labels = draw(st.lists(labels, min_size=1, max_size=3, unique=True))
    entities, facts = [], []
    for q in qids:
        # a bare name with a comma-separated piece that is a QID (`Q0,0`) reads as a second entity: no model writes one
        name = draw(bare_names)
        triples = []
        for _ in range(draw(st.integers(1, 5))):
            if draw(st.booleans()):
                pid = draw(pids)
                rel, label = pid, NAMES[pid][0]
            else:
                rel, label = "", draw(st.sampled_from(own_labels))
            v = draw(writable)
            triples.append(Triple(subject=q, subject_label=name, relation=rel, relation_label=label, value=v, value_label=v))
        entities.append(EntityGraph(qid=q, label=name, triples=triples))
        facts += triples
    kg = KnowledgeGraph(entities=entities)
    vocab = Vocabulary.of(kg)
    foreign = draw(
        st.lists(
            st.tuples(
                labels.filter(lambda label: not vocab.knows_label(label)),
                # a value the KG lacks loses quotes around it (`"Rome"` cites Rome)
                unquoted,
            ),
            max_size=2,
        )
    )
    brackets, expected = [], set()
    for _ in range(draw(st.integers(1, 4))):
        blocks = []
        for q in draw(st.lists(st.sampled_from(qids), min_size=1, max_size=2)):  # several QIDs per bracket
            e = next(x for x in entities if x.qid == q)
            if draw(st.integers(0, 4)) == 0:  # the prompt's knowledge lines, copied
                lines = []
                copyable = [t for t in e.triples if "|" not in t.value_label and not t.value_label.endswith((";", ","))]
                for t in draw(st.lists(st.sampled_from(copyable), max_size=3)) if copyable else []:
                    names = NAMES[t.relation] if t.relation else (t.relation_label,)
                    rel = _spelling(draw, draw(st.sampled_from(names)))
                    entity = [_escape(e.label)] if draw(st.booleans()) and "|" not in e.label else []
                    lines.append(" | ".join([q, *entity, rel, _escape(t.value_label)]))
                    expected.add(vocab.citation_key(q, rel, t.value_label))
                if lines:
                    brackets.append("[" + draw(line_breaks).join(lines) + "]")
                continue
            head = [draw(st.sampled_from([q, f"qid: {q}", f"QID: {q}"]))]
            colon = draw(st.integers(0, 5)) == 0  # `[Q1: relation: value]`
            lead = draw(leads)
            if lead == "bare name":
                head.append(_escape(e.label))
            elif lead == "name pair":
                head.append(f"name: {_escape(e.label)}")
                expected.add(vocab.citation_key(q, "name", e.label))
            pairs = []
            for t in draw(st.lists(st.sampled_from(e.triples), min_size=1, max_size=3)):
                names = NAMES[t.relation] if t.relation else (t.relation_label,)
                rel = _spelling(draw, draw(st.sampled_from(names)))
                expected.add(vocab.citation_key(q, rel, t.value_label))
                if draw(st.integers(0, 5)) == 0:  # JSON-ish: a quoted label
                    rel = f'"{rel}"'
                pairs.append(f"{rel}: {_escape(t.value_label)}")
            for rel, v in draw(st.lists(st.sampled_from(foreign), max_size=1)) if foreign else []:
                pairs.append(f"{rel}: {_escape(v)}")
                expected.add(vocab.citation_key(q, rel, v))
            blocks.append(f"{head[0]}: " + ", ".join(head[1:] + pairs) if colon else ", ".join(head + pairs))
        if blocks:
            brackets.append("[" + ", ".join(blocks) + "]")
    sentences = [f"Sentence number {i} states a fact{' ' + b + '.' if draw(st.booleans()) else '. ' + b}" for i, b in enumerate(brackets)]
    return vocab, " ".join(sentences), expected


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


@settings(max_examples=400, deadline=None)
@given(graphs_and_answers())
def test_every_citation_style_parses_back_to_the_same_facts(case):
    vocab, text, expected = case
    a = parse_answer(text, vocab)
    assert a.errors == []
    assert {vocab.citation_key(c.qid, c.relation, c.value) for c in a.citations} == expected
    assert all(s.clean.startswith("Sentence number") for s in a.sentences)


def test_a_quoted_label_glues_a_known_value_with_a_comma_and_a_colon():
    """Found by hypothesis: `"a": 0,:` is the relation `a` with the KG's value `0,:`, not a pair with no label."""
    from kalma.properties import Vocabulary
    from kalma.schema import EntityGraph, KnowledgeGraph, Triple

    t = Triple(subject="Q1", subject_label="x", relation="", relation_label="a", value="0,:", value_label="0,:")
    vocab = Vocabulary.of(KnowledgeGraph(entities=[EntityGraph(qid="Q1", label="x", triples=[t])]))
    a = parse_answer('Sentence number 0 states a fact. [Q1: "a": 0,:]', vocab)
    assert a.errors == [] and [(c.relation, c.value) for c in a.citations] == [("a", "0,:")]


@st.composite
def citation_lists(draw):
    rels = draw(st.lists(labels, min_size=1, max_size=4, unique=True))
    out = []
    for _ in range(draw(st.integers(1, 6))):
        qid = f"Q{draw(st.integers(1, 99999))}"
        rel = draw(st.sampled_from(rels))
        val = draw(writable)
        out.append(C(qid, rel, val))
    return rels, out


def _vocab_of(cits):
    from kalma.properties import Vocabulary
    from kalma.schema import Triple

    return Vocabulary.of([Triple(subject=c.qid, relation="", relation_label=c.relation, value=c.value, value_label=c.value) for c in cits])


@settings(max_examples=300, deadline=None)
@given(citation_lists())
def test_format_then_parse_is_identity(data):
    _, cits = data
    text = format_citations(cits)
    parsed, errors = parse_citations(text, _vocab_of(cits))
    assert errors == []
    assert [(c.qid, c.relation, c.value) for c in parsed] == [(c.qid, c.relation, c.value) for c in cits]


@settings(max_examples=100, deadline=None)
@given(citation_lists(), st.booleans())
def test_sentence_round_trip(data, na):
    _, cits = data
    text = format_sentence("The painter was born in Rome.", cits, na=na) + " " + format_sentence("Another claim here.", [], na=True)
    a = parse_answer(text, _vocab_of(cits))
    assert len(a.sentences) == 2
    assert a.sentences[0].citations == cits and a.sentences[0].na == na
    assert a.sentences[0].clean == "The painter was born in Rome."
    assert a.sentences[1].na and a.errors == []


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(), max_size=200), st.none() | st.lists(labels, max_size=3))
def test_parser_never_raises(text, rels):
    a = parse_answer(text, rels)
    assert all(isinstance(e.kind, str) for e in a.errors)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="[]Q1,: NA/qid.\n abc\\", max_size=80))
def test_parser_never_raises_on_markup_soup(text):
    a = parse_answer(text)
    for s in a.sentences:
        assert all(c.qid.startswith("Q") for c in s.citations)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="[]Q1,: NA/qid.\n abc\\-•", max_size=120))
def test_every_sentence_knows_where_it_was_written(text):
    """Verdicts point into the answer: each sentence is the answer's own span, in order, and each
    citation names the bracket it came from."""
    a = parse_answer(text)
    ends = 0
    for s in a.sentences:
        assert text[s.start : s.end] == s.text and s.start >= ends
        ends = s.end
        assert len(s.written) == len(s.citations) and all(w in s.text for w in s.written)


def test_spans_of_a_paper_style_answer():
    text = "Orazio was a painter [Q367360, occupation: painter].  He died in 1639 [NA].\n[Q1, a: b]\n- one [Q2, x: y][Q2, z: w]"
    a = parse_answer(text)
    assert [(s.start, s.end) for s in a.sentences] == [(0, 52), (54, 86), (87, 113)]
    assert a.sentences[1].written == ["[Q1, a: b]"] and a.sentences[2].written == ["[Q2, x: y]", "[Q2, z: w]"]
