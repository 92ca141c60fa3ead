"""What the suite writes around the KG's labels, per language: prompts, questions and sentences.

One `Phrasing` per written language (`PHRASINGS`, keyed by the tag `kalma.languages` registers
as `written`); `phrasing(tag)` is what every stage reads. The English entry holds exactly the
text the suite wrote before languages, so English prompts, answers and datasets stay the same
bytes. For a well-formed tag without written text, `phrasing` gives the English text with one
more instruction (`write_in`): a model is asked, in English, to write in the language; the
offline `template` backend refuses such a prompt (`refuse_unwritten`), since its sentences would
be English.

Grammar is modelled where the templates need it: a class's noun and a property's noun carry a
gender, articles follow it (`la ville`, `le film`, `das Unternehmen`), French elides before a
vowel or a mute h (`l'organisation`, `d'Artemisia`) and contracts `de` + `le` (`du film`), and
Spanish `de` + `el` (`del club`). A property is phrased by its own pattern where the language has
one (`relations`: "X was founded by Y", "X a été fondée par"... no: "X a pour fondateur Y"),
else by its noun ("Le lieu de naissance d'Artemisia est Rome."), else, for a label the table
does not know, by a construction that reads for any noun ("Artemisia a pour scolarité ...").

The machine-readable parts stay the same in every language: the `Task: <step>` line that names
a builder step, the knowledge lines (`QID | entity | relation | value`) and the citation markup.

>>> fr = phrasing("fr")
>>> fr.the(fr.noun("Q43229")), fr.of_the(fr.noun("Q515")), fr.of_the(fr.noun("Q11424")), fr.of_name("Artemisia")
("l'organisation", 'de la ville', 'du film', "d'Artemisia")
>>> fr.sentence("Artemisia", "lieu de naissance", "Rome", "P19")
"Le lieu de naissance d'Artemisia est Rome."
>>> phrasing("de").about(phrasing("de").noun("Q515"), "Lyon"), phrasing("es").of_the(phrasing("es").noun("Q476028"))
('über die Stadt Lyon', 'del club de fútbol')
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from ..errors import ConfigError
from ..properties import Vocabulary
from . import LANGUAGES, get_language


@dataclass(frozen=True)
class Noun:
    word: str
    gender: str = "m"  # "m", "f" or "n": what its articles agree with


# ----------------------------------------------------------------------------- one language


@dataclass(frozen=True)
class Phrasing:
    code: str
    # ---- grammar: articles by case and gender; the forms elided before a vowel; "of" before a name
    articles: Mapping[str, Mapping[str, str]]  # case ("the", "of", "about") -> gender -> article, with its space
    elided: Mapping[str, str]  # article -> its form before a vowel ("le " -> "l'"); empty: no elision
    of: str  # "of" before a name ("de "), elided where `elided` has it
    # ---- nouns: the registry's classes (English: the class's own `noun`) and the properties'
    nouns: Mapping[str, Noun]  # class QID -> noun
    relation_nouns: Mapping[str, Noun]  # PID -> the property's noun, for the possessive form
    relations: Mapping[str, str]  # PID -> "{subject} ... {value}.": properties that are no noun
    class_sentences: Mapping[str, Mapping[str, str]]  # class QID -> PID -> pattern, over `relations`
    labels: Mapping[str, tuple[str, ...]]  # PID -> the KG's labels of it in this language, to phrase a label back
    possessive: str  # "{subject}'s {relation} is {value}.": a known noun's sentence (English: any label's)
    unknown: str  # a label the table does not know ("{subject} a pour {relation} {value}.")
    and_: str  # joins two names
    clause_join: str  # joins two clauses into one sentence
    # ---- the baseline's prompt (`baselines.prompt`) and the template's answer
    instruction: str
    demo_knowledge: str
    demo_question: str
    demo_answer: str
    example: str  # "Example:"
    your_turn: str  # "Now your turn."
    knowledge_header: str
    question_header: str
    answer_header: str
    no_knowledge: str  # in place of the knowledge when none was found
    not_covered: str  # the template's [NA] sentence when no knowledge is listed
    says_nothing: str  # "... says nothing about {words}."
    stopwords: frozenset[str]
    trivial: frozenset[str]  # relation labels the template answer never states
    # ---- the builder's prompts (`dataset_builder.prompts`): instructions and headers
    annotate: str
    annotated: str
    extend: str
    new_sentence: str
    general: str
    specific: str
    reply_question: str  # "Reply with the question only."
    not_who: str
    paragraph: str
    new_fact: str
    people: str
    entities: str
    facts: str
    # ---- the template's questions
    who_one: str  # "Who was {name}?"
    who_many: str
    this_person: str
    what_connects: str
    what_known: str  # "What is known about {thing}?": `thing` from `about`
    what_one: str  # "What was {asked}?"
    what_many: str
    asked: str  # one asked fact of a specific question, from the relation's noun: "{name}'s {relation}"
    asked_unknown: str  # the same for a label the table does not know
    # ---- judge pairs (`evaluation.judge_pairs`) and records (`dataset_builder.from_kg`)
    state: str  # "Write one English sentence that states every fact below ..."
    sentence_slot: str  # "Sentence:"
    records_paragraph: str  # `records from-kg`: "Write a short encyclopedic paragraph that states every fact listed ..."
    # ---- judge pairs that vary what sentences say and how (`kalma judge pairs --vary`), and deny
    vary: str  # the instruction asking a model for its own words
    deny: str  # the instruction asking a model to deny one fact
    variants: Mapping[str, tuple[str, ...]]  # PID -> other ways people state it ("X was born in Y")
    negated: Mapping[str, str]  # a pattern -> the same sentence denied ("X's R is not V.")
    not_true: str  # any other sentence denied: "It is not true that {clause}."
    months: tuple[str, ...]
    date_format: str  # "{day} {month} {year}"
    # ---- G-Eval (`evaluation.text_quality`)
    geval_prompt: str
    geval_aspects: Mapping[str, tuple[str, str]]
    # ---- a language without written text: the English text, asking to write in it
    write_in: str = ""
    vowels: str = "aeiouyhàâäéèêëîïôöûüœæ"
    possessive_pids: frozenset[str] = field(default_factory=frozenset)  # English: nouns whose possessive reads

    # -------------------------------------------------------------- grammar

    def _article(self, case: str, noun: Noun) -> str:
        art = self.articles.get(case, {}).get(noun.gender, "")
        if self.elided and noun.word[:1].lower() in self.vowels:
            art = self.elided.get(art, art)
        return art

    def the(self, noun: Noun) -> str:
        """`l'organisation`, `la ville`, `the city`."""
        return f"{self._article('the', noun)}{noun.word}"

    def of_the(self, noun: Noun) -> str:
        """`de l'organisation`, `du film`, `de la ville`."""
        return f"{self._article('of', noun)}{noun.word}"

    def named(self, noun: Noun, name: str) -> str:
        """An entity named with its class, as an object: `the city Lyon`, `die Stadt Lyon`."""
        return f"{self._article('object', noun)}{noun.word} {name}"

    def about(self, noun: Noun, name: str) -> str:
        """The object of "what is known about": `de la ville Lyon`, `über die Stadt Lyon`."""
        return f"{self._article('about', noun)}{noun.word} {name}"

    def of_name(self, name: str) -> str:
        """`d'Artemisia`, `de Rome`, `von Rom`."""
        of = self.of
        if self.elided and name[:1].lower() in self.vowels:
            of = self.elided.get(of, of)
        return f"{of}{name}"

    def noun(self, qid: str, fallback: str = "") -> Noun:
        """The noun of the registry's class `qid` in this language; `fallback` (the class's label in
        the language, from the KG) for a class the registry does not name."""
        return self.nouns.get(qid) or Noun(fallback or qid)

    # -------------------------------------------------------------- properties

    def pid(self, relation: str, label: str = "") -> str:
        """The PID a relation names: itself when it is one, else the property whose label in this
        language (or an alias the table lists) `label` is; "" when unknown."""
        if re.fullmatch(r"P\d+", relation or ""):
            return relation
        key = _norm(label or relation)
        found = _label_index(self).get(key, "")
        if not found and not self.relation_nouns:  # English text: the suite's own table of (people's) properties too
            found = Vocabulary.default().identity(key)
        return found if re.fullmatch(r"P\d+", found) else ""

    def pattern(self, pid: str, cls: str = "") -> str | None:
        """The property's own sentence pattern, the class's first (`class_sentences`); None for a noun."""
        return self.class_sentences.get(cls, {}).get(pid) or self.relations.get(pid)

    def sentence(self, subject: str, relation: str, value: str, pid: str = "", cls: str = "", negated: bool = False) -> str:
        """One fact as a sentence: the property's pattern, else its noun's possessive, else the
        construction for any label. English keeps "X's R is V." for any label it has no pattern for.
        `negated`: the same sentence denying the fact ("X was not founded by Y")."""
        pid = pid or self.pid(relation)
        noun = self.relation_nouns.get(pid)
        pattern = self.pattern(pid, cls) or (self.possessive if noun is not None else self.unknown)
        return self.fill(pattern, subject, value, noun.word if noun else relation, self.the(noun) if noun else "", negated)

    def fill(self, pattern: str, subject: str, value: str, relation: str = "", the: str = "", negated: bool = False) -> str:
        """`pattern` filled, or denied: its written negation, else the language's "It is not true that ..."."""
        if not negated:
            return _fill(pattern, self, subject, value, relation, the)
        if denied := self.negated.get(pattern):
            return _fill(denied, self, subject, value, relation, the)
        return _fill(self.not_true, self, "", "", _fill(pattern, self, subject, value, relation, the, capital=False).rstrip("."))

    def variant(self, subject: str, relation: str, value: str, pick: int, pid: str = "") -> str | None:
        """Another way people state the fact (`variants`, the `pick`-th modulo their number); None when
        the language has none for the property."""
        ways = self.variants.get(pid or self.pid(relation), ())
        return _fill(ways[pick % len(ways)], self, subject, value) if ways else None

    def date(self, value: str) -> str | None:
        """An ISO date ("1975-11-06", as the KG gives it) as people write it ("6 November 1975"); None
        for anything else (a year alone stays as it is)."""
        m = re.fullmatch(r"(\d{3,4})-(\d\d)-(\d\d)(?:T.*)?", value.strip())
        if not m or not (1 <= int(m.group(2)) <= 12 and 1 <= int(m.group(3)) <= 31):
            return None
        day = int(m.group(3))
        return self.date_format.format(day="1er" if self.code == "fr" and day == 1 else day, month=self.months[int(m.group(2)) - 1], year=int(m.group(1)))

    def asked_fact(self, subject: str, relation: str) -> str:
        """One asked fact of a specific question: "Artemisia's place of birth", "le lieu de naissance d'Artemisia"."""
        noun = self.relation_nouns.get(self.pid(relation))
        if noun is None:
            return self.asked_unknown.format(name=subject, relation=relation, of_name=self.of_name(subject))
        return self.asked.format(
            name=subject,
            relation=noun.word,
            the=self.the(noun),
            of_the=self.of_the(noun),
            object=f"{self._article('object', noun)}{noun.word}",
            of_name=self.of_name(subject),
        )


def _fill(pattern: str, ph: Phrasing, subject: str, value: str, relation: str = "", the: str = "", capital: bool = True) -> str:
    """The pattern filled; a sentence that opens with the pattern's own words (an article) gets a
    capital, one that opens with a name keeps the name as the KG writes it ("iPhone")."""
    text = pattern.format(subject=subject, value=value, relation=relation, the=the, of_subject=ph.of_name(subject), of_value=ph.of_name(value), clause=relation)
    return text if not capital or pattern.startswith(("{subject}", "{value}")) else text[:1].upper() + text[1:]


def _norm(label: str) -> str:
    return " ".join(unicodedata.normalize("NFC", label).replace("_", " ").casefold().split())


_INDEX: dict[str, dict[str, str]] = {}


def _label_index(ph: Phrasing) -> dict[str, str]:
    """label -> PID over the language's table (built once per language)."""
    if ph.code not in _INDEX:
        nouns = {_norm(n.word): pid for pid, n in ph.relation_nouns.items()}
        _INDEX[ph.code] = nouns | {_norm(name): pid for pid, names in ph.labels.items() for name in names}
    return _INDEX[ph.code]


# ----------------------------------------------------------------------------- English: today's text

ENGLISH = Phrasing(
    code="en",
    articles={case: {g: art for g in "mfn"} for case, art in (("the", "the "), ("object", "the "), ("of", "of the "), ("about", "the "))},
    elided={},
    of="of ",
    nouns={},  # a class's own `noun` (kalma.classes) is its English
    relation_nouns={},
    relations={
        "P159": "{subject} has its headquarters in {value}.",
        "P112": "{subject} was founded by {value}.",
        "P190": "{subject} is twinned with {value}.",
        "P131": "{subject} is located in {value}.",
        "P355": "{value} is a subsidiary of {subject}.",
        "P50": "{subject} was written by {value}.",
        "P57": "{subject} was directed by {value}.",
    },
    # Properties people have too (the authors' release holds `owned by` and `industry` of people,
    # where the English output stays the bytes it was): phrased so only for the class.
    class_sentences={
        "Q43229": {"P452": "{subject} works in {value}.", "P127": "{subject} is owned by {value}."},
        "Q4830453": {"P159": "{subject} has its headquarters in {value}.", "P452": "{subject} works in {value}.", "P127": "{subject} is owned by {value}."},
        "Q515": {"P17": "{subject} is a city in {value}.", "P6": "The mayor of {subject} is {value}."},
        "Q7725634": {"P136": "{subject} is a work of {value}."},
    },
    labels={
        "P159": ("headquarters location", "headquarters", "based in"),
        "P112": ("founded by", "founder"),
        "P190": ("twinned administrative body", "twin town", "sister city", "twin city"),
        "P131": ("located in the administrative territorial entity", "located in"),
        "P127": ("owned by", "owner"),
        "P355": ("subsidiary", "subsidiaries"),
        "P749": ("parent organization", "parent company"),
        "P50": ("author", "written by"),
        "P57": ("director", "directed by"),
        "P452": ("industry",),
        "P17": ("country",),
        "P6": ("head of government", "mayor"),
        "P36": ("capital",),
        "P136": ("genre",),
    },
    possessive="{subject}'s {relation} is {value}.",
    unknown="{subject}'s {relation} is {value}.",
    and_=" and ",
    clause_join=", and ",
    instruction="""Answer the question in a short paragraph, using the knowledge listed below.
Each knowledge line reads: QID | entity | relation | value.
After every claim the knowledge supports, cite the supporting lines in square brackets as
[QID, relation: value]; several lines about one entity may share a bracket:
[QID, relation: value, relation: value]. Copy relations and values exactly as listed.
If a claim needs knowledge that is not listed, you may still state it, but mark it [NA]
instead of citing anything. Never cite a line that is not listed.""",
    demo_knowledge="""Q7186 | Marie Curie | place of birth | Warsaw
Q7186 | Marie Curie | spouse | Pierre Curie
Q7186 | Marie Curie | award received | Nobel Prize in Physics
Q7186 | Marie Curie | award received | Nobel Prize in Chemistry
Q37463 | Pierre Curie | place of birth | Paris
Q37463 | Pierre Curie | spouse | Marie Curie""",
    demo_question="Who were Marie and Pierre Curie, and what recognition did Marie Curie receive?",
    demo_answer=(
        "Marie Curie was born in Warsaw and married Pierre Curie "
        "[Q7186, place of birth: Warsaw, spouse: Pierre Curie]. "
        "Pierre Curie was born in Paris [Q37463, place of birth: Paris]. "
        "Marie Curie received the Nobel Prize in Physics and the Nobel Prize in Chemistry "
        "[Q7186, award received: Nobel Prize in Physics, award received: Nobel Prize in Chemistry], "
        "the first person to win Nobel prizes in two sciences [NA]. "
        "She died in 1934 [NA]."
    ),
    example="Example:",
    your_turn="Now your turn.",
    knowledge_header="Knowledge:",
    question_header="Question:",
    answer_header="Answer:",
    no_knowledge="(no knowledge was found for this question)",
    not_covered="The given knowledge does not cover this question.",
    says_nothing="The given knowledge says nothing about {words}.",
    stopwords=frozenset(
        "a an and are as at be been by did do does for from had has have he her his how in is it its of on or she "
        "that the their them they this to was were what when where which who whom whose why with would about "
        "also both did into some other there these those any can could many more most much such than then own "
        "life career known role influence influenced work works shape shaped".split()
    ),
    trivial=frozenset({"instance of", "sex or gender", "given name", "family name", "described by source", "topic's main category"}),
    annotate=(
        "Below is a paragraph and a list of facts (QID | entity | relation | value). After each sentence of the "
        "paragraph, add in square brackets the listed facts that the sentence states, written as "
        "[QID, relation: value]. Leave the words of the paragraph unchanged and add no fact that is not listed."
    ),
    annotated="Annotated paragraph:",
    extend=(
        "Continue the paragraph with exactly one new sentence that states the new fact and fits what came before. "
        "End that sentence with the fact's citation in square brackets, [QID, relation: value]. "
        "Reply with the new sentence only."
    ),
    new_sentence="New sentence:",
    general="Write one short, natural question that the paragraph answers, as a curious reader would ask it. ",
    specific="Write one detailed question that can only be answered completely with every fact listed, as the paragraph states them. ",
    reply_question="Reply with the question only.",
    not_who="Ask with 'Who' only about a person. ",
    paragraph="Paragraph:",
    new_fact="New fact:",
    people="People:",
    entities="Entities:",
    facts="Facts:",
    who_one="Who was {name}?",
    who_many="Who were {names}?",
    this_person="this person",
    what_connects="What connects {things}?",
    what_known="What is known about {thing}?",
    what_one="What was {asked}?",
    what_many="What were {asked}?",
    asked="{name}'s {relation}",
    asked_unknown="{name}'s {relation}",
    state=(
        "Write one English sentence that states every fact below, and nothing else. Write each value as it is given. "
        "Reply with the sentence only, without citations or brackets."
    ),
    sentence_slot="Sentence:",
    records_paragraph=(
        "Write a short encyclopedic paragraph that states every fact listed (QID | entity | relation | value), and nothing else. Reply with the paragraph only."
    ),
    vary=(
        "Write one English sentence that states every fact below, and nothing else, in your own words: you may name a relation "
        "differently and order the facts as you like, but write each value as it is given. Reply with the sentence only, without citations or brackets."
    ),
    deny=(
        "Write one English sentence that denies the fact below: it says that the entity does not have this value. "
        "Write the value as it is given. Reply with the sentence only, without citations or brackets."
    ),
    variants={
        "P19": ("{subject} was born in {value}.", "{value} is the birthplace of {subject}."),
        "P20": ("{subject} died in {value}.", "{value} is where {subject} died."),
        "P569": ("{subject} was born on {value}.",),
        "P570": ("{subject} died on {value}.",),
        "P26": ("{subject} was married to {value}.", "{value} and {subject} were married."),
        "P22": ("{value} was the father of {subject}.",),
        "P25": ("{value} was the mother of {subject}.",),
        "P40": ("{value} was a child of {subject}.", "{subject} was a parent of {value}."),
        "P3373": ("{subject} and {value} were siblings.",),
        "P27": ("{subject} was a citizen of {value}.",),
        "P69": ("{subject} studied at {value}.", "{subject} attended {value}."),
        "P166": ("{subject} was awarded the {value}.", "{subject} received the {value}."),
        "P108": ("{subject} worked for {value}.",),
        "P106": ("{subject}'s profession was {value}.",),
        "P119": ("{subject} was buried in {value}.",),
        "P1412": ("{subject} spoke {value}.",),
        "P102": ("{subject} was a member of {value}.",),
        "P463": ("{subject} was a member of {value}.",),
        "P39": ("{subject} held the position of {value}.",),
        "P509": ("{subject} died of {value}.",),
        "P551": ("{subject} lived in {value}.",),
        "P1066": ("{subject} studied under {value}.",),
        "P159": ("{subject} is based in {value}.",),
        "P112": ("{value} founded {subject}.",),
        "P190": ("{value} is a twin town of {subject}.",),
        "P50": ("{value} wrote {subject}.",),
        "P57": ("{value} directed {subject}.",),
    },
    negated={
        "{subject}'s {relation} is {value}.": "{subject}'s {relation} is not {value}.",
        "{subject} has its headquarters in {value}.": "{subject} does not have its headquarters in {value}.",
        "{subject} was founded by {value}.": "{subject} was not founded by {value}.",
        "{subject} is twinned with {value}.": "{subject} is not twinned with {value}.",
        "{subject} is located in {value}.": "{subject} is not located in {value}.",
        "{subject} is owned by {value}.": "{subject} is not owned by {value}.",
        "{value} is a subsidiary of {subject}.": "{value} is not a subsidiary of {subject}.",
        "{subject} was written by {value}.": "{subject} was not written by {value}.",
        "{subject} was directed by {value}.": "{subject} was not directed by {value}.",
        "{subject} works in {value}.": "{subject} does not work in {value}.",
        "{subject} is a city in {value}.": "{subject} is not a city in {value}.",
        "The mayor of {subject} is {value}.": "The mayor of {subject} is not {value}.",
        "{subject} is a work of {value}.": "{subject} is not a work of {value}.",
    },
    not_true="It is not true that {clause}.",
    months=("January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"),
    date_format="{day} {month} {year}",
    geval_prompt="""You are grading one answer to one question on a single criterion.

Knowledge:
{knowledge}

Question: {question}

Answer: {answer}

Criterion: {criterion}

How to grade: {steps} Then choose a score from 1 (poor) to 5 (excellent).

Reply with the score only, a single digit from 1 to 5.""",
    geval_aspects={
        "coherence": (
            "Coherence: the answer reads as one organised whole; each sentence follows from the previous "
            "ones and together they build a clear account rather than a list of loose facts.",
            "Read the question. Read the answer and follow how its sentences connect. Note jumps, repetitions and contradictions between sentences.",
        ),
        "consistency": (
            "Consistency: every claim in the answer agrees with the knowledge listed above; claims the "
            "knowledge does not mention are acceptable only if they are not contradicted by it.",
            "Read the knowledge. Check each claim of the answer against it. Count the claims that contradict the knowledge.",
        ),
        "fluency": (
            "Fluency: the answer is grammatical, well punctuated and natural to read, judged sentence by sentence.",
            "Read the answer. Note grammar errors, broken sentences and awkward wording.",
        ),
        "relevance": (
            "Relevance: the answer addresses what the question asks, covers its parts, and avoids material the question did not ask for.",
            "Read the question and list what it asks. Check which parts the answer covers and what it adds without need.",
        ),
    },
)


# ----------------------------------------------------------------------------- French

_FR_CLASSES = {
    "Q5": Noun("personne", "f"),
    "Q43229": Noun("organisation", "f"),
    "Q4830453": Noun("entreprise", "f"),
    "Q515": Noun("ville", "f"),
    "Q6256": Noun("pays"),
    "Q3624078": Noun("pays"),
    "Q1549591": Noun("ville", "f"),
    "Q82794": Noun("région", "f"),
    "Q2221906": Noun("lieu"),
    "Q8502": Noun("montagne", "f"),
    "Q41176": Noun("bâtiment"),
    "Q3918": Noun("université", "f"),
    "Q476028": Noun("club de football"),
    "Q7725634": Noun("œuvre", "f"),
    "Q11424": Noun("film"),
    "Q2424752": Noun("produit"),
    "Q12140": Noun("médicament"),
    "Q8054": Noun("protéine", "f"),
}

FRENCH = Phrasing(
    code="fr",
    articles={
        "the": {"m": "le ", "f": "la ", "n": "le "},
        "object": {"m": "le ", "f": "la ", "n": "le "},
        "of": {"m": "du ", "f": "de la ", "n": "du "},
        "about": {"m": "du ", "f": "de la ", "n": "du "},
    },
    elided={"le ": "l'", "la ": "l'", "du ": "de l'", "de la ": "de l'", "de ": "d'"},
    of="de ",
    nouns=_FR_CLASSES,
    relation_nouns={
        "P19": Noun("lieu de naissance"),
        "P20": Noun("lieu de mort"),
        "P569": Noun("date de naissance", "f"),
        "P570": Noun("date de mort", "f"),
        "P22": Noun("père"),
        "P25": Noun("mère", "f"),
        "P26": Noun("conjoint ou conjointe"),
        "P40": Noun("enfant"),
        "P3373": Noun("frère ou sœur"),
        "P27": Noun("pays de nationalité"),
        "P106": Noun("occupation", "f"),
        "P69": Noun("scolarité", "f"),
        "P166": Noun("distinction reçue", "f"),
        "P21": Noun("sexe ou genre"),
        "P735": Noun("prénom"),
        "P734": Noun("nom de famille"),
        "P108": Noun("employeur"),
        "P119": Noun("lieu de sépulture"),
        "P39": Noun("fonction", "f"),
        "P102": Noun("parti politique"),
        "P101": Noun("domaine d'activité"),
        "P103": Noun("langue maternelle", "f"),
        "P140": Noun("religion", "f"),
        "P509": Noun("cause de la mort", "f"),
        "P551": Noun("résidence", "f"),
        "P800": Noun("œuvre notable", "f"),
        "P184": Noun("directeur de thèse"),
        "P17": Noun("pays"),
        "P36": Noun("capitale", "f"),
        "P6": Noun("chef de l'exécutif"),
        "P136": Noun("genre artistique"),
        "P749": Noun("organisation mère", "f"),
        "P452": Noun("secteur d'activité"),
        "P802": Noun("élève"),
        "P571": Noun("date de fondation ou de création", "f"),
        "P577": Noun("date de publication", "f"),
    },
    relations={
        "P1066": "{subject} a étudié auprès {of_value}.",
        "P159": "{subject} a son siège à {value}.",
        "P112": "{value} a fondé {subject}.",
        "P190": "{subject} a pour ville jumelle {value}.",
        "P131": "{subject} fait partie {of_value}.",
        "P127": "{subject} appartient à {value}.",
        "P355": "{value} est une filiale {of_subject}.",
        "P50": "{value} a écrit {subject}.",
        "P57": "{value} a réalisé {subject}.",
    },
    class_sentences={
        "Q4830453": {"P159": "{subject} a son siège à {value}."},
        "Q515": {"P17": "{subject} est une ville {of_value}.", "P6": "Le maire {of_subject} est {value}."},
        "Q7725634": {"P136": "{subject} est une œuvre du genre {value}."},
    },
    labels={
        "P159": ("siège", "siège social"),
        "P112": ("fondateur ou fondatrice", "fondateur", "fondé par"),
        "P190": ("jumelage ou partenariat", "ville jumelle", "jumelage"),
        "P131": ("localisation administrative", "situé dans l'entité territoriale administrative"),
        "P127": ("propriétaire", "détenu par"),
        "P355": ("filiale",),
        "P50": ("auteur ou autrice", "auteur"),
        "P57": ("réalisateur ou réalisatrice", "réalisateur"),
        "P26": ("conjoint",),
        "P27": ("nationalité",),
        "P6": ("maire",),
        "P136": ("genre",),
        "P1066": ("élève de",),
    },
    possessive="{the} {of_subject} est {value}.",
    unknown="{subject} a pour {relation} {value}.",
    and_=" et ",
    clause_join=", et ",
    instruction="""Répondez à la question en un court paragraphe, à l'aide des connaissances listées ci-dessous.
Chaque ligne de connaissance se lit : QID | entité | relation | valeur.
Après chaque affirmation que les connaissances appuient, citez entre crochets les lignes qui l'appuient, sous la forme
[QID, relation: valeur] ; plusieurs lignes sur une même entité peuvent partager un crochet :
[QID, relation: valeur, relation: valeur]. Recopiez les relations et les valeurs exactement telles qu'elles sont listées.
Si une affirmation demande une connaissance qui n'est pas listée, vous pouvez tout de même l'énoncer, mais marquez-la [NA]
au lieu de citer quoi que ce soit. Ne citez jamais une ligne qui n'est pas listée.""",
    demo_knowledge="""Q7186 | Marie Curie | lieu de naissance | Varsovie
Q7186 | Marie Curie | conjoint ou conjointe | Pierre Curie
Q7186 | Marie Curie | distinction reçue | prix Nobel de physique
Q7186 | Marie Curie | distinction reçue | prix Nobel de chimie
Q37463 | Pierre Curie | lieu de naissance | Paris
Q37463 | Pierre Curie | conjoint ou conjointe | Marie Curie""",
    demo_question="Qui étaient Marie et Pierre Curie, et quelles distinctions Marie Curie a-t-elle reçues ?",
    demo_answer=(
        "Marie Curie est née à Varsovie et a épousé Pierre Curie "
        "[Q7186, lieu de naissance: Varsovie, conjoint ou conjointe: Pierre Curie]. "
        "Pierre Curie est né à Paris [Q37463, lieu de naissance: Paris]. "
        "Marie Curie a reçu le prix Nobel de physique et le prix Nobel de chimie "
        "[Q7186, distinction reçue: prix Nobel de physique, distinction reçue: prix Nobel de chimie], "
        "la première personne à obtenir des prix Nobel dans deux sciences [NA]. "
        "Elle est morte en 1934 [NA]."
    ),
    example="Exemple :",
    your_turn="À vous maintenant.",
    knowledge_header="Connaissances :",
    question_header="Question :",
    answer_header="Réponse :",
    no_knowledge="(aucune connaissance n'a été trouvée pour cette question)",
    not_covered="Les connaissances données ne couvrent pas cette question.",
    says_nothing="Les connaissances données ne disent rien de : {words}.",
    stopwords=frozenset(
        "le la les l un une des de du d et ou à au aux en dans par pour sur avec sans qui que qu quoi quel quelle quels "
        "quelles est sont était étaient a ont avait avaient été être il elle ils elles on son sa ses leur leurs ce cet "
        "cette ces se s y ne n pas plus aussi comment pourquoi où quand lequel laquelle dont tous toutes tout autre autres "
        "vie carrière connu connue rôle influence influencé œuvre œuvres sait".split()
    ),
    trivial=frozenset({"nature de l'élément", "sexe ou genre", "prénom", "nom de famille", "décrit par", "catégorie principale du sujet"}),
    annotate=(
        "Voici un paragraphe et une liste de faits (QID | entité | relation | valeur). Après chaque phrase du "
        "paragraphe, ajoutez entre crochets les faits listés que la phrase énonce, écrits sous la forme "
        "[QID, relation: valeur]. Ne changez pas les mots du paragraphe et n'ajoutez aucun fait qui ne soit pas listé."
    ),
    annotated="Paragraphe annoté :",
    extend=(
        "Continuez le paragraphe avec exactement une nouvelle phrase qui énonce le nouveau fait et s'accorde avec ce qui précède. "
        "Terminez cette phrase par la citation du fait entre crochets, [QID, relation: valeur]. "
        "Répondez avec la nouvelle phrase seulement."
    ),
    new_sentence="Nouvelle phrase :",
    general="Écrivez une question courte et naturelle à laquelle le paragraphe répond, comme la poserait un lecteur curieux. ",
    specific="Écrivez une question détaillée à laquelle on ne peut répondre complètement qu'avec chacun des faits listés, tels que le paragraphe les énonce. ",
    reply_question="Répondez avec la question seulement.",
    not_who="Ne posez de question en « Qui » que sur une personne. ",
    paragraph="Paragraphe :",
    new_fact="Nouveau fait :",
    people="Personnes :",
    entities="Entités :",
    facts="Faits :",
    who_one="Qui était {name} ?",
    who_many="Qui étaient {names} ?",
    this_person="cette personne",
    what_connects="Qu'est-ce qui relie {things} ?",
    what_known="Que sait-on {thing} ?",
    what_one="Que sait-on {asked} ?",
    what_many="Que sait-on {asked} ?",
    asked="{of_the} {of_name}",
    asked_unknown="de la propriété « {relation} » {of_name}",
    state=(
        "Écrivez une phrase en français qui énonce chacun des faits ci-dessous, et rien d'autre. Écrivez chaque valeur telle qu'elle est donnée. "
        "Répondez avec la phrase seulement, sans citations ni crochets."
    ),
    sentence_slot="Phrase :",
    records_paragraph=(
        "Écrivez un court paragraphe encyclopédique en français qui énonce chacun des faits de la liste (QID | entité | relation | valeur), "
        "et rien d'autre. Répondez avec le paragraphe seulement."
    ),
    vary=(
        "Écrivez une phrase en français qui énonce chacun des faits ci-dessous, et rien d'autre, avec vos propres mots : vous pouvez "
        "nommer une relation autrement et ordonner les faits à votre guise, mais écrivez chaque valeur telle qu'elle est donnée. "
        "Répondez avec la phrase seulement, sans citations ni crochets."
    ),
    deny=(
        "Écrivez une phrase en français qui nie le fait ci-dessous : elle dit que l'entité n'a pas cette valeur. "
        "Écrivez la valeur telle qu'elle est donnée. Répondez avec la phrase seulement, sans citations ni crochets."
    ),
    variants={
        "P19": ("{subject} a vu le jour à {value}.", "{value} est la ville natale {of_subject}."),
        "P20": ("{value} est le lieu où {subject} a fini ses jours.",),
        "P569": ("{subject} a vu le jour le {value}.",),
        "P570": ("La mort {of_subject} est survenue le {value}.",),
        "P26": ("{subject} a épousé {value}.",),
        "P22": ("{value} est le père {of_subject}.",),
        "P25": ("{value} est la mère {of_subject}.",),
        "P40": ("{subject} a pour enfant {value}.",),
        "P69": ("{subject} a étudié à {value}.",),
        "P166": ("{subject} a reçu la distinction {value}.",),
        "P108": ("{subject} a travaillé pour {value}.",),
        "P106": ("{subject} exerçait le métier {of_value}.",),
        "P119": ("{subject} repose à {value}.",),
        "P102": ("{subject} a été membre {of_value}.",),
        "P463": ("{subject} a été membre {of_value}.",),
        "P159": ("Le siège {of_subject} se trouve à {value}.",),
        "P112": ("{value} est à l'origine {of_subject}.",),
        "P190": ("{subject} entretient un jumelage avec {value}.",),
        "P50": ("{subject} est une œuvre {of_value}.",),
        "P57": ("{subject} est un film {of_value}.",),
    },
    negated={
        "{the} {of_subject} est {value}.": "{the} {of_subject} n'est pas {value}.",
        "{subject} a pour {relation} {value}.": "{subject} n'a pas pour {relation} {value}.",
        "{subject} a son siège à {value}.": "{subject} n'a pas son siège à {value}.",
        "{value} a fondé {subject}.": "{value} n'a pas fondé {subject}.",
        "{subject} a pour ville jumelle {value}.": "{subject} n'a pas pour ville jumelle {value}.",
        "{subject} fait partie {of_value}.": "{subject} ne fait pas partie {of_value}.",
        "{subject} appartient à {value}.": "{subject} n'appartient pas à {value}.",
        "{value} est une filiale {of_subject}.": "{value} n'est pas une filiale {of_subject}.",
        "{value} a écrit {subject}.": "{value} n'a pas écrit {subject}.",
        "{value} a réalisé {subject}.": "{value} n'a pas réalisé {subject}.",
        "{subject} a étudié auprès {of_value}.": "{subject} n'a pas étudié auprès {of_value}.",
        "{subject} est une ville {of_value}.": "{subject} n'est pas une ville {of_value}.",
        "Le maire {of_subject} est {value}.": "Le maire {of_subject} n'est pas {value}.",
        "{subject} est une œuvre du genre {value}.": "{subject} n'est pas une œuvre du genre {value}.",
    },
    not_true="Il est faux de dire que {clause}.",
    months=("janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août", "septembre", "octobre", "novembre", "décembre"),
    date_format="{day} {month} {year}",
    geval_prompt="""Vous évaluez une réponse à une question selon un seul critère.

Connaissances :
{knowledge}

Question : {question}

Réponse : {answer}

Critère : {criterion}

Comment noter : {steps} Choisissez ensuite une note de 1 (faible) à 5 (excellent).

Répondez avec la note seulement, un seul chiffre de 1 à 5.""",
    geval_aspects={
        "coherence": (
            "Cohérence : la réponse se lit comme un tout organisé ; chaque phrase découle des précédentes "
            "et ensemble elles construisent un exposé clair plutôt qu'une liste de faits décousus.",
            "Lisez la question. Lisez la réponse et suivez l'enchaînement de ses phrases. "
            "Relevez les sauts, les répétitions et les contradictions entre phrases.",
        ),
        "consistency": (
            "Fidélité : chaque affirmation de la réponse s'accorde avec les connaissances listées ci-dessus ; les affirmations "
            "que les connaissances ne mentionnent pas ne sont acceptables que si elles ne les contredisent pas.",
            "Lisez les connaissances. Vérifiez chaque affirmation de la réponse à leur lumière. Comptez les affirmations qui les contredisent.",
        ),
        "fluency": (
            "Fluidité : la réponse est grammaticale, bien ponctuée et naturelle à lire, jugée phrase par phrase.",
            "Lisez la réponse. Relevez les fautes de grammaire, les phrases cassées et les tournures maladroites.",
        ),
        "relevance": (
            "Pertinence : la réponse traite ce que demande la question, en couvre les parties et évite ce que la question ne demandait pas.",
            "Lisez la question et notez ce qu'elle demande. Vérifiez quelles parties la réponse couvre et ce qu'elle ajoute sans nécessité.",
        ),
    },
)


# ----------------------------------------------------------------------------- German

GERMAN = Phrasing(
    code="de",
    articles={
        "the": {"m": "der ", "f": "die ", "n": "das "},
        "object": {"m": "den ", "f": "die ", "n": "das "},
        "of": {"m": "des ", "f": "der ", "n": "des "},
        "about": {"m": "über den ", "f": "über die ", "n": "über das "},
    },
    elided={},
    of="von ",
    nouns={
        "Q5": Noun("Person", "f"),
        "Q43229": Noun("Organisation", "f"),
        "Q4830453": Noun("Unternehmen", "n"),
        "Q515": Noun("Stadt", "f"),
        "Q6256": Noun("Land", "n"),
        "Q3624078": Noun("Land", "n"),
        "Q1549591": Noun("Stadt", "f"),
        "Q82794": Noun("Region", "f"),
        "Q2221906": Noun("Ort"),
        "Q8502": Noun("Berg"),
        "Q41176": Noun("Gebäude", "n"),
        "Q3918": Noun("Universität", "f"),
        "Q476028": Noun("Fußballverein"),
        "Q7725634": Noun("Werk", "n"),
        "Q11424": Noun("Film"),
        "Q2424752": Noun("Produkt", "n"),
        "Q12140": Noun("Arzneimittel", "n"),
        "Q8054": Noun("Protein", "n"),
    },
    relation_nouns={
        "P19": Noun("Geburtsort"),
        "P20": Noun("Sterbeort"),
        "P569": Noun("Geburtsdatum", "n"),
        "P570": Noun("Sterbedatum", "n"),
        "P22": Noun("Vater"),
        "P25": Noun("Mutter", "f"),
        "P26": Noun("Ehepartner"),
        "P40": Noun("Kind", "n"),
        "P3373": Noun("Geschwister", "n"),
        "P27": Noun("Staatsangehörigkeit", "f"),
        "P106": Noun("Tätigkeit", "f"),
        "P69": Noun("besuchte Bildungseinrichtung", "f"),
        "P166": Noun("Auszeichnung", "f"),
        "P21": Noun("Geschlecht", "n"),
        "P735": Noun("Vorname"),
        "P734": Noun("Familienname"),
        "P108": Noun("Arbeitgeber"),
        "P119": Noun("Begräbnisort"),
        "P39": Noun("Position", "f"),
        "P102": Noun("Partei", "f"),
        "P101": Noun("Fachgebiet", "n"),
        "P103": Noun("Muttersprache", "f"),
        "P140": Noun("Religion", "f"),
        "P509": Noun("Todesursache", "f"),
        "P551": Noun("Wohnort"),
        "P800": Noun("Hauptwerk", "n"),
        "P184": Noun("Doktorvater"),
        "P17": Noun("Staat"),
        "P36": Noun("Hauptstadt", "f"),
        "P6": Noun("Regierungschef"),
        "P136": Noun("Genre", "n"),
        "P749": Noun("Mutterorganisation", "f"),
        "P452": Noun("Branche", "f"),
        "P159": Noun("Sitz"),
        "P802": Noun("Schüler"),
        "P571": Noun("Gründungsdatum", "n"),
        "P577": Noun("Veröffentlichungsdatum", "n"),
    },
    relations={
        "P1066": "{subject} lernte bei {value}.",
        "P112": "{subject} wurde von {value} gegründet.",
        "P190": "{subject} ist eine Partnerstadt von {value}.",
        "P131": "{subject} liegt in {value}.",
        "P127": "{subject} gehört {value}.",
        "P355": "{value} ist eine Tochtergesellschaft von {subject}.",
        "P50": "{subject} wurde von {value} geschrieben.",
        "P57": "Bei {subject} führte {value} Regie.",
    },
    class_sentences={
        "Q515": {"P17": "{subject} ist eine Stadt in {value}.", "P6": "Der Bürgermeister von {subject} ist {value}."},
        "Q7725634": {"P136": "{subject} ist ein Werk des Genres {value}."},
    },
    labels={
        "P159": ("Hauptverwaltung", "Sitz"),
        "P112": ("Gründer", "gegründet von"),
        "P190": ("Partnerstadt", "Partnerschaft", "Städtepartnerschaft"),
        "P131": ("liegt in der Verwaltungseinheit",),
        "P127": ("Eigentümer", "Besitzer"),
        "P355": ("Tochterorganisation", "Tochtergesellschaft"),
        "P50": ("Autor", "Autorin"),
        "P57": ("Regisseur", "Regie"),
        "P6": ("Leiter der Regierung", "Bürgermeister"),
        "P27": ("Land der Staatsangehörigkeit",),
        "P571": ("Gründung, Erstellung bzw. Entstehung",),
        "P1066": ("Schüler von",),
    },
    possessive="{the} {of_subject} ist {value}.",
    unknown="Die Eigenschaft „{relation}“ von {subject} ist {value}.",
    and_=" und ",
    clause_join=", und ",
    instruction="""Beantworten Sie die Frage in einem kurzen Absatz mit Hilfe des unten aufgeführten Wissens.
Jede Wissenszeile lautet: QID | Entität | Relation | Wert.
Zitieren Sie nach jeder Aussage, die das Wissen stützt, die stützenden Zeilen in eckigen Klammern als
[QID, Relation: Wert]; mehrere Zeilen über eine Entität dürfen eine Klammer teilen:
[QID, Relation: Wert, Relation: Wert]. Übernehmen Sie Relationen und Werte genau so, wie sie aufgeführt sind.
Braucht eine Aussage Wissen, das nicht aufgeführt ist, dürfen Sie sie dennoch treffen, markieren Sie sie aber mit [NA],
statt etwas zu zitieren. Zitieren Sie nie eine Zeile, die nicht aufgeführt ist.""",
    demo_knowledge="""Q7186 | Marie Curie | Geburtsort | Warschau
Q7186 | Marie Curie | Ehepartner | Pierre Curie
Q7186 | Marie Curie | Auszeichnung | Nobelpreis für Physik
Q7186 | Marie Curie | Auszeichnung | Nobelpreis für Chemie
Q37463 | Pierre Curie | Geburtsort | Paris
Q37463 | Pierre Curie | Ehepartner | Marie Curie""",
    demo_question="Wer waren Marie und Pierre Curie, und welche Auszeichnungen erhielt Marie Curie?",
    demo_answer=(
        "Marie Curie wurde in Warschau geboren und heiratete Pierre Curie "
        "[Q7186, Geburtsort: Warschau, Ehepartner: Pierre Curie]. "
        "Pierre Curie wurde in Paris geboren [Q37463, Geburtsort: Paris]. "
        "Marie Curie erhielt den Nobelpreis für Physik und den Nobelpreis für Chemie "
        "[Q7186, Auszeichnung: Nobelpreis für Physik, Auszeichnung: Nobelpreis für Chemie], "
        "als erster Mensch Nobelpreise in zwei Wissenschaften [NA]. "
        "Sie starb 1934 [NA]."
    ),
    example="Beispiel:",
    your_turn="Jetzt sind Sie dran.",
    knowledge_header="Wissen:",
    question_header="Frage:",
    answer_header="Antwort:",
    no_knowledge="(zu dieser Frage wurde kein Wissen gefunden)",
    not_covered="Das gegebene Wissen deckt diese Frage nicht ab.",
    says_nothing="Das gegebene Wissen sagt nichts über: {words}.",
    stopwords=frozenset(
        "der die das den dem des ein eine einen einem einer eines und oder in im an am auf aus bei mit von vom zu zur zum "
        "für über unter nach vor ist sind war waren wurde wurden hat haben hatte hatten wer was wie wo wann warum welche "
        "welcher welches wen wem er sie es ihr ihre ihren sein seine seinen auch noch nicht als dass sich man bekannt "
        "leben karriere rolle einfluss werk werke".split()
    ),
    trivial=frozenset({"ist ein(e)", "Geschlecht", "Vorname", "Familienname", "beschrieben in", "Hauptkategorie"}),
    annotate=(
        "Unten stehen ein Absatz und eine Liste von Fakten (QID | Entität | Relation | Wert). Fügen Sie nach jedem Satz des "
        "Absatzes in eckigen Klammern die aufgeführten Fakten hinzu, die der Satz aussagt, geschrieben als "
        "[QID, Relation: Wert]. Lassen Sie die Wörter des Absatzes unverändert und fügen Sie keinen Fakt hinzu, der nicht aufgeführt ist."
    ),
    annotated="Annotierter Absatz:",
    extend=(
        "Setzen Sie den Absatz mit genau einem neuen Satz fort, der den neuen Fakt aussagt und zum Vorangehenden passt. "
        "Beenden Sie diesen Satz mit dem Zitat des Fakts in eckigen Klammern, [QID, Relation: Wert]. "
        "Antworten Sie nur mit dem neuen Satz."
    ),
    new_sentence="Neuer Satz:",
    general="Schreiben Sie eine kurze, natürliche Frage, die der Absatz beantwortet, wie ein neugieriger Leser sie stellen würde. ",
    specific="Schreiben Sie eine ausführliche Frage, die sich nur mit jedem aufgeführten Fakt vollständig beantworten lässt, so wie der Absatz sie aussagt. ",
    reply_question="Antworten Sie nur mit der Frage.",
    not_who="Fragen Sie nur bei einer Person mit „Wer“. ",
    paragraph="Absatz:",
    new_fact="Neuer Fakt:",
    people="Personen:",
    entities="Entitäten:",
    facts="Fakten:",
    who_one="Wer war {name}?",
    who_many="Wer waren {names}?",
    this_person="diese Person",
    what_connects="Was verbindet {things}?",
    what_known="Was ist {thing} bekannt?",
    what_one="Was ist über {asked} bekannt?",
    what_many="Was ist über {asked} bekannt?",
    asked="{object} {of_name}",
    asked_unknown="die Eigenschaft „{relation}“ {of_name}",
    state=(
        "Schreiben Sie einen deutschen Satz, der jeden der folgenden Fakten aussagt, und nichts anderes. Schreiben Sie jeden Wert so, wie er angegeben ist. "
        "Antworten Sie nur mit dem Satz, ohne Zitate oder Klammern."
    ),
    sentence_slot="Satz:",
    records_paragraph=(
        "Schreiben Sie einen kurzen enzyklopädischen Absatz auf Deutsch, der jeden aufgeführten Fakt (QID | Entität | Relation | Wert) aussagt, "
        "und nichts anderes. Antworten Sie nur mit dem Absatz."
    ),
    vary=(
        "Schreiben Sie einen deutschen Satz, der jeden der folgenden Fakten aussagt, und nichts anderes, in eigenen Worten: Sie dürfen "
        "eine Relation anders benennen und die Fakten beliebig ordnen, aber schreiben Sie jeden Wert so, wie er angegeben ist. "
        "Antworten Sie nur mit dem Satz, ohne Zitate oder Klammern."
    ),
    deny=(
        "Schreiben Sie einen deutschen Satz, der den folgenden Fakt verneint: Er sagt, dass die Entität diesen Wert nicht hat. "
        "Schreiben Sie den Wert so, wie er angegeben ist. Antworten Sie nur mit dem Satz, ohne Zitate oder Klammern."
    ),
    variants={
        "P19": ("{subject} wurde in {value} geboren.", "{value} ist der Geburtsort von {subject}."),
        "P20": ("{subject} starb in {value}.",),
        "P569": ("{subject} wurde am {value} geboren.",),
        "P570": ("{subject} starb am {value}.",),
        "P26": ("{subject} war mit {value} verheiratet.",),
        "P22": ("{value} war der Vater von {subject}.",),
        "P25": ("{value} war die Mutter von {subject}.",),
        "P40": ("{subject} ist ein Elternteil von {value}.",),
        "P3373": ("{subject} und {value} sind Geschwister.",),
        "P69": ("{subject} wurde an {value} ausgebildet.",),
        "P166": ("{subject} wurde mit {value} ausgezeichnet.",),
        "P108": ("{subject} arbeitete für {value}.",),
        "P106": ("{subject} war beruflich als {value} tätig.",),
        "P119": ("{subject} wurde in {value} begraben.",),
        "P1412": ("{subject} sprach {value}.",),
        "P102": ("{subject} war Mitglied von {value}.",),
        "P463": ("{subject} war Mitglied von {value}.",),
        "P112": ("{value} gründete {subject}.",),
        "P159": ("Der Sitz von {subject} befindet sich in {value}.",),
        "P190": ("{value} ist eine Partnerstadt von {subject}.",),
        "P50": ("{value} schrieb {subject}.",),
        "P57": ("{value} führte Regie bei {subject}.",),
    },
    negated={
        "{the} {of_subject} ist {value}.": "{the} {of_subject} ist nicht {value}.",
        "Die Eigenschaft „{relation}“ von {subject} ist {value}.": "Die Eigenschaft „{relation}“ von {subject} ist nicht {value}.",
        "{subject} wurde von {value} gegründet.": "{subject} wurde nicht von {value} gegründet.",
        "{subject} ist eine Partnerstadt von {value}.": "{subject} ist keine Partnerstadt von {value}.",
        "{subject} liegt in {value}.": "{subject} liegt nicht in {value}.",
        "{subject} gehört {value}.": "{subject} gehört nicht {value}.",
        "{value} ist eine Tochtergesellschaft von {subject}.": "{value} ist keine Tochtergesellschaft von {subject}.",
        "{subject} wurde von {value} geschrieben.": "{subject} wurde nicht von {value} geschrieben.",
        "Bei {subject} führte {value} Regie.": "Bei {subject} führte nicht {value} Regie.",
        "{subject} lernte bei {value}.": "{subject} lernte nicht bei {value}.",
        "{subject} ist eine Stadt in {value}.": "{subject} ist keine Stadt in {value}.",
        "Der Bürgermeister von {subject} ist {value}.": "Der Bürgermeister von {subject} ist nicht {value}.",
        "{subject} ist ein Werk des Genres {value}.": "{subject} ist kein Werk des Genres {value}.",
    },
    not_true="Folgendes stimmt nicht: {clause}.",
    months=("Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober", "November", "Dezember"),
    date_format="{day}. {month} {year}",
    geval_prompt="""Sie bewerten eine Antwort auf eine Frage nach einem einzigen Kriterium.

Wissen:
{knowledge}

Frage: {question}

Antwort: {answer}

Kriterium: {criterion}

So bewerten Sie: {steps} Wählen Sie dann eine Note von 1 (schlecht) bis 5 (ausgezeichnet).

Antworten Sie nur mit der Note, einer einzelnen Ziffer von 1 bis 5.""",
    geval_aspects={
        "coherence": (
            "Kohärenz: Die Antwort liest sich als ein geordnetes Ganzes; jeder Satz folgt aus den vorigen, "
            "und zusammen ergeben sie eine klare Darstellung statt einer Liste loser Fakten.",
            "Lesen Sie die Frage. Lesen Sie die Antwort und verfolgen Sie, wie ihre Sätze zusammenhängen. "
            "Notieren Sie Sprünge, Wiederholungen und Widersprüche zwischen Sätzen.",
        ),
        "consistency": (
            "Konsistenz: Jede Aussage der Antwort stimmt mit dem oben aufgeführten Wissen überein; Aussagen, die das "
            "Wissen nicht erwähnt, sind nur zulässig, wenn es ihnen nicht widerspricht.",
            "Lesen Sie das Wissen. Prüfen Sie jede Aussage der Antwort daran. Zählen Sie die Aussagen, die dem Wissen widersprechen.",
        ),
        "fluency": (
            "Sprachfluss: Die Antwort ist grammatisch korrekt, gut interpunktiert und natürlich zu lesen, Satz für Satz beurteilt.",
            "Lesen Sie die Antwort. Notieren Sie Grammatikfehler, abgebrochene Sätze und holprige Formulierungen.",
        ),
        "relevance": (
            "Relevanz: Die Antwort geht auf das ein, was die Frage wissen will, deckt ihre Teile ab und vermeidet, wonach die Frage nicht gefragt hat.",
            "Lesen Sie die Frage und notieren Sie, was sie wissen will. Prüfen Sie, welche Teile die Antwort abdeckt und was sie ohne Not hinzufügt.",
        ),
    },
)


# ----------------------------------------------------------------------------- Spanish

SPANISH = Phrasing(
    code="es",
    articles={
        "the": {"m": "el ", "f": "la ", "n": "lo "},
        "object": {"m": "el ", "f": "la ", "n": "lo "},
        "of": {"m": "del ", "f": "de la ", "n": "de lo "},
        "about": {"m": "del ", "f": "de la ", "n": "de lo "},
    },
    elided={},
    of="de ",
    nouns={
        "Q5": Noun("persona", "f"),
        "Q43229": Noun("organización", "f"),
        "Q4830453": Noun("empresa", "f"),
        "Q515": Noun("ciudad", "f"),
        "Q6256": Noun("país"),
        "Q3624078": Noun("país"),
        "Q1549591": Noun("ciudad", "f"),
        "Q82794": Noun("región", "f"),
        "Q2221906": Noun("lugar"),
        "Q8502": Noun("montaña", "f"),
        "Q41176": Noun("edificio"),
        "Q3918": Noun("universidad", "f"),
        "Q476028": Noun("club de fútbol"),
        "Q7725634": Noun("obra", "f"),
        "Q11424": Noun("película", "f"),
        "Q2424752": Noun("producto"),
        "Q12140": Noun("medicamento"),
        "Q8054": Noun("proteína", "f"),
    },
    relation_nouns={
        "P19": Noun("lugar de nacimiento"),
        "P20": Noun("lugar de fallecimiento"),
        "P569": Noun("fecha de nacimiento", "f"),
        "P570": Noun("fecha de fallecimiento", "f"),
        "P22": Noun("padre"),
        "P25": Noun("madre", "f"),
        "P26": Noun("cónyuge"),
        "P40": Noun("hijo o hija"),
        "P3373": Noun("hermano o hermana"),
        "P27": Noun("país de nacionalidad"),
        "P106": Noun("ocupación", "f"),
        "P69": Noun("centro educativo"),
        "P166": Noun("premio recibido"),
        "P21": Noun("sexo o género"),
        "P735": Noun("nombre de pila"),
        "P734": Noun("apellido"),
        "P108": Noun("empleador"),
        "P119": Noun("lugar de sepultura"),
        "P39": Noun("cargo"),
        "P102": Noun("partido político"),
        "P101": Noun("campo de trabajo"),
        "P103": Noun("lengua materna", "f"),
        "P140": Noun("religión", "f"),
        "P509": Noun("causa de muerte", "f"),
        "P551": Noun("residencia", "f"),
        "P800": Noun("obra destacada", "f"),
        "P184": Noun("director de tesis"),
        "P17": Noun("país"),
        "P36": Noun("capital", "f"),
        "P6": Noun("jefe de gobierno"),
        "P136": Noun("género"),
        "P749": Noun("organización matriz", "f"),
        "P452": Noun("sector de actividad"),
        "P802": Noun("estudiante"),
        "P571": Noun("fecha de fundación o creación", "f"),
        "P577": Noun("fecha de publicación", "f"),
    },
    relations={
        "P1066": "{subject} estudió con {value}.",
        "P159": "{subject} tiene su sede en {value}.",
        "P112": "{value} fundó {subject}.",
        "P190": "{subject} y {value} son ciudades hermanadas.",
        "P131": "{subject} se encuentra en {value}.",
        "P127": "{subject} pertenece a {value}.",
        "P355": "{value} es una filial de {subject}.",
        "P50": "{value} escribió {subject}.",
        "P57": "{value} dirigió {subject}.",
    },
    class_sentences={
        "Q515": {"P17": "{subject} es una ciudad de {value}.", "P6": "El alcalde de {subject} es {value}."},
        "Q7725634": {"P136": "{subject} es una obra del género {value}."},
    },
    labels={
        "P159": ("sede",),
        "P112": ("fundador", "fundado por"),
        "P190": ("ciudad hermanada", "hermanamiento"),
        "P131": ("situado en la entidad territorial administrativa", "ubicado en"),
        "P127": ("propiedad de", "propietario"),
        "P355": ("subsidiaria", "filial"),
        "P50": ("autor", "autora"),
        "P57": ("director", "directora"),
        "P40": ("hijo", "hijos"),
        "P3373": ("hermano", "hermanos"),
        "P6": ("alcalde",),
        "P452": ("industria",),
        "P1066": ("alumno de",),
    },
    possessive="{the} {of_subject} es {value}.",
    unknown="{subject} tiene como {relation} {value}.",
    and_=" y ",
    clause_join=", y ",
    instruction="""Responda a la pregunta en un párrafo breve, usando el conocimiento que se enumera abajo.
Cada línea de conocimiento se lee: QID | entidad | relación | valor.
Después de cada afirmación que el conocimiento respalde, cite entre corchetes las líneas que la respaldan, como
[QID, relación: valor]; varias líneas sobre una misma entidad pueden compartir un corchete:
[QID, relación: valor, relación: valor]. Copie las relaciones y los valores exactamente como aparecen.
Si una afirmación necesita conocimiento que no está en la lista, puede enunciarla de todos modos, pero márquela con [NA]
en lugar de citar nada. No cite nunca una línea que no esté en la lista.""",
    demo_knowledge="""Q7186 | Marie Curie | lugar de nacimiento | Varsovia
Q7186 | Marie Curie | cónyuge | Pierre Curie
Q7186 | Marie Curie | premio recibido | Premio Nobel de Física
Q7186 | Marie Curie | premio recibido | Premio Nobel de Química
Q37463 | Pierre Curie | lugar de nacimiento | París
Q37463 | Pierre Curie | cónyuge | Marie Curie""",
    demo_question="¿Quiénes fueron Marie y Pierre Curie, y qué reconocimientos recibió Marie Curie?",
    demo_answer=(
        "Marie Curie nació en Varsovia y se casó con Pierre Curie "
        "[Q7186, lugar de nacimiento: Varsovia, cónyuge: Pierre Curie]. "
        "Pierre Curie nació en París [Q37463, lugar de nacimiento: París]. "
        "Marie Curie recibió el Premio Nobel de Física y el Premio Nobel de Química "
        "[Q7186, premio recibido: Premio Nobel de Física, premio recibido: Premio Nobel de Química], "
        "la primera persona en ganar premios Nobel en dos ciencias [NA]. "
        "Murió en 1934 [NA]."
    ),
    example="Ejemplo:",
    your_turn="Ahora es su turno.",
    knowledge_header="Conocimiento:",
    question_header="Pregunta:",
    answer_header="Respuesta:",
    no_knowledge="(no se encontró conocimiento para esta pregunta)",
    not_covered="El conocimiento dado no cubre esta pregunta.",
    says_nothing="El conocimiento dado no dice nada sobre: {words}.",
    stopwords=frozenset(
        "el la los las lo un una unos unas de del y e o u a al en con por para sobre sin que qué quién quiénes cuál cuáles "
        "cómo dónde cuándo por qué es son fue fueron era eran ha han había habían su sus se le les también más muy este "
        "esta estos estas ese esa otro otra otros otras sabe vida carrera conocido conocida papel influencia obra obras".split()
    ),
    trivial=frozenset({"instancia de", "sexo o género", "nombre de pila", "apellido", "descrito por la fuente", "categoría principal del tema"}),
    annotate=(
        "A continuación hay un párrafo y una lista de hechos (QID | entidad | relación | valor). Después de cada oración del "
        "párrafo, añada entre corchetes los hechos de la lista que la oración enuncia, escritos como "
        "[QID, relación: valor]. No cambie las palabras del párrafo y no añada ningún hecho que no esté en la lista."
    ),
    annotated="Párrafo anotado:",
    extend=(
        "Continúe el párrafo con exactamente una oración nueva que enuncie el hecho nuevo y encaje con lo anterior. "
        "Termine esa oración con la cita del hecho entre corchetes, [QID, relación: valor]. "
        "Responda solo con la oración nueva."
    ),
    new_sentence="Oración nueva:",
    general="Escriba una pregunta breve y natural que el párrafo responda, como la haría un lector curioso. ",
    specific="Escriba una pregunta detallada que solo pueda responderse por completo con cada uno de los hechos de la lista, tal como los enuncia el párrafo. ",
    reply_question="Responda solo con la pregunta.",
    not_who="Pregunte con «Quién» solo sobre una persona. ",
    paragraph="Párrafo:",
    new_fact="Hecho nuevo:",
    people="Personas:",
    entities="Entidades:",
    facts="Hechos:",
    who_one="¿Quién fue {name}?",
    who_many="¿Quiénes fueron {names}?",
    this_person="esta persona",
    what_connects="¿Qué relación hay entre {things}?",
    what_known="¿Qué se sabe {thing}?",
    what_one="¿Qué se sabe {asked}?",
    what_many="¿Qué se sabe {asked}?",
    asked="{of_the} {of_name}",
    asked_unknown="de la propiedad «{relation}» {of_name}",
    state=(
        "Escriba una oración en español que enuncie cada uno de los hechos siguientes, y nada más. Escriba cada valor tal como se da. "
        "Responda solo con la oración, sin citas ni corchetes."
    ),
    sentence_slot="Oración:",
    records_paragraph=(
        "Escriba un breve párrafo enciclopédico en español que enuncie cada uno de los hechos de la lista (QID | entidad | relación | valor), "
        "y nada más. Responda solo con el párrafo."
    ),
    vary=(
        "Escriba una oración en español que enuncie cada uno de los hechos siguientes, y nada más, con sus propias palabras: puede "
        "nombrar una relación de otro modo y ordenar los hechos como quiera, pero escriba cada valor tal como se da. "
        "Responda solo con la oración, sin citas ni corchetes."
    ),
    deny=(
        "Escriba una oración en español que niegue el hecho siguiente: dice que la entidad no tiene ese valor. "
        "Escriba el valor tal como se da. Responda solo con la oración, sin citas ni corchetes."
    ),
    variants={
        "P19": ("{subject} nació en {value}.", "{value} es la ciudad natal de {subject}."),
        "P20": ("{subject} murió en {value}.",),
        "P569": ("{subject} nació el {value}.",),
        "P570": ("{subject} murió el {value}.",),
        "P26": ("{subject} contrajo matrimonio con {value}.",),
        "P22": ("{value} fue el padre de {subject}.",),
        "P25": ("{value} fue la madre de {subject}.",),
        "P40": ("{value} es descendiente de {subject}.",),
        "P3373": ("{subject} y {value} son hermanos.",),
        "P69": ("{subject} estudió en {value}.",),
        "P166": ("{subject} recibió {value}.",),
        "P108": ("{subject} trabajó para {value}.",),
        "P106": ("{subject} trabajó como {value}.",),
        "P119": ("{subject} recibió sepultura en {value}.",),
        "P1412": ("{subject} hablaba {value}.",),
        "P102": ("{subject} fue miembro de {value}.",),
        "P463": ("{subject} fue miembro de {value}.",),
        "P112": ("{value} dio origen a {subject}.",),
        "P159": ("La sede de {subject} está en {value}.",),
        "P190": ("{value} es ciudad hermana de {subject}.",),
        "P50": ("{subject} es obra de {value}.",),
        "P57": ("{value} estuvo a cargo de la dirección de {subject}.",),
    },
    negated={
        "{the} {of_subject} es {value}.": "{the} {of_subject} no es {value}.",
        "{subject} tiene como {relation} {value}.": "{subject} no tiene como {relation} {value}.",
        "{subject} tiene su sede en {value}.": "{subject} no tiene su sede en {value}.",
        "{value} fundó {subject}.": "{value} no fundó {subject}.",
        "{subject} y {value} son ciudades hermanadas.": "{subject} y {value} no son ciudades hermanadas.",
        "{subject} se encuentra en {value}.": "{subject} no se encuentra en {value}.",
        "{subject} pertenece a {value}.": "{subject} no pertenece a {value}.",
        "{value} es una filial de {subject}.": "{value} no es una filial de {subject}.",
        "{value} escribió {subject}.": "{value} no escribió {subject}.",
        "{value} dirigió {subject}.": "{value} no dirigió {subject}.",
        "{subject} estudió con {value}.": "{subject} no estudió con {value}.",
        "{subject} es una ciudad de {value}.": "{subject} no es una ciudad de {value}.",
        "El alcalde de {subject} es {value}.": "El alcalde de {subject} no es {value}.",
        "{subject} es una obra del género {value}.": "{subject} no es una obra del género {value}.",
    },
    not_true="Es falso decir que {clause}.",
    months=("enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "octubre", "noviembre", "diciembre"),
    date_format="{day} de {month} de {year}",
    geval_prompt="""Está evaluando una respuesta a una pregunta según un único criterio.

Conocimiento:
{knowledge}

Pregunta: {question}

Respuesta: {answer}

Criterio: {criterion}

Cómo evaluar: {steps} Después elija una puntuación de 1 (mala) a 5 (excelente).

Responda solo con la puntuación, un único dígito de 1 a 5.""",
    geval_aspects={
        "coherence": (
            "Coherencia: la respuesta se lee como un todo organizado; cada oración se sigue de las anteriores "
            "y juntas construyen una exposición clara en lugar de una lista de hechos sueltos.",
            "Lea la pregunta. Lea la respuesta y siga cómo se conectan sus oraciones. Anote saltos, repeticiones y contradicciones entre oraciones.",
        ),
        "consistency": (
            "Consistencia: cada afirmación de la respuesta concuerda con el conocimiento de arriba; las afirmaciones que "
            "el conocimiento no menciona solo son aceptables si este no las contradice.",
            "Lea el conocimiento. Compruebe cada afirmación de la respuesta con él. Cuente las afirmaciones que lo contradicen.",
        ),
        "fluency": (
            "Fluidez: la respuesta es gramatical, está bien puntuada y se lee con naturalidad, juzgada oración por oración.",
            "Lea la respuesta. Anote errores gramaticales, oraciones rotas y expresiones torpes.",
        ),
        "relevance": (
            "Pertinencia: la respuesta trata lo que pide la pregunta, cubre sus partes y evita lo que la pregunta no pidió.",
            "Lea la pregunta y anote lo que pide. Compruebe qué partes cubre la respuesta y qué añade sin necesidad.",
        ),
    },
)


# ----------------------------------------------------------------------------- the registry

PHRASINGS: dict[str, Phrasing] = {ph.code: ph for ph in (ENGLISH, FRENCH, GERMAN, SPANISH)}

# The one line a prompt for a language without written text adds: the instructions stay English.
WRITE_IN = " Write your reply in the language with the BCP-47 tag {code}, whatever the language of these instructions."
_WRITE_IN = re.compile(r"Write your reply in the language with the BCP-47 tag ([a-z0-9-]+), whatever")


def written() -> tuple[str, ...]:
    """The tags the suite has text written in."""
    return tuple(code for code, lang in LANGUAGES.items() if lang.written and code in PHRASINGS)


def phrasing(tag: str = "en", where: str = "--language") -> Phrasing:
    """The text of language `tag`; for a well-formed tag without written text, the English text
    asking a model to write in it (`write_in`). A tag that is none is a ConfigError naming `where`."""
    code = get_language(tag, where).code
    if code in PHRASINGS:
        return PHRASINGS[code]
    return replace(ENGLISH, code=code, write_in=WRITE_IN.format(code=code))


def unwritten_in(prompt: str) -> str | None:
    """The tag a prompt asks a model to write in when the suite has no text written in it, else None."""
    m = _WRITE_IN.search(prompt)
    return m.group(1) if m else None


def refuse_unwritten(code: str, who: str = "the template backend") -> ConfigError:
    """The one-line refusal of an offline backend asked for a language it has no sentences in."""
    return ConfigError(
        f"{who} has no sentences written in {code!r} (it writes {', '.join(written())}): use a model backend (--llm), "
        f"which is asked in English to write in {code}"
    )


def by_header(prompt: str, attr: str, default: Phrasing = ENGLISH) -> Phrasing:
    """The written language whose `attr` header (a slot a prompt ends with, or a block header)
    the prompt holds: how an offline backend knows which language a prompt is in."""
    text = prompt.rstrip()
    for ph in PHRASINGS.values():
        if ph.code != "en" and (text.endswith(getattr(ph, attr)) or f"\n{getattr(ph, attr)}" in prompt):
            return ph
    return default
