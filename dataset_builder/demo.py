"""The bundled demo dataset: questions written by this project about the people of the
KaLMA paper's own examples, resolved against the bundled demo snapshot at run time.

Each question lists its gold people, a reference answer written from its minimum set (the
role the builder's final paragraph plays), and its minimum knowledge set as (QID, relation,
value) facts; building fails loudly if the snapshot no longer holds one of them.
"""

from __future__ import annotations

from typing import TypedDict

from kalma.kg.base import KnowledgeSource
from kalma.schema import DatasetEntry, KnowledgeGraph


class DemoQuestion(TypedDict):
    id: str
    reference: str
    general: str
    specific: str
    people: list[str]
    minimum: list[tuple[str, str, str]]  # (subject QID, relation label, value label) in the snapshot


DEMO_QUESTIONS: list[DemoQuestion] = [
    {
        "id": "demo-gentileschi",
        "reference": "Artemisia Gentileschi was a painter whose father Orazio Gentileschi was also her teacher. She died in Naples, and Orazio Gentileschi died in London.",
        "general": "How did Orazio Gentileschi shape his daughter Artemisia's career?",
        "specific": "How did Orazio Gentileschi, her father and teacher, shape the career of the painter Artemisia Gentileschi, and where did each of them die?",
        "people": ["Q212657", "Q367360"],
        "minimum": [
            ("Q212657", "father", "Orazio Gentileschi"),
            ("Q212657", "student of", "Orazio Gentileschi"),
            ("Q212657", "occupation", "painter"),
            ("Q212657", "place of death", "Naples"),
            ("Q367360", "place of death", "London"),
        ],
    },
    {
        "id": "demo-hertwig",
        "reference": "Richard Hertwig was a biologist whose doctoral student was Stanislaus von Prowazek. His brother Oscar Hertwig studied under Ernst Haeckel, who was also his doctoral advisor, and Oscar was nominated for the Nobel Prize in Physiology or Medicine.",
        "general": "Who were Oscar and Richard Hertwig?",
        "specific": "Who were Oscar and Richard Hertwig, who were their mentors and students, and what prize was Oscar Hertwig nominated for?",
        "people": ["Q68753", "Q85907"],
        "minimum": [
            ("Q85907", "occupation", "biologist"),
            ("Q85907", "doctoral student", "Stanislaus von Prowazek"),
            ("Q68753", "doctoral advisor", "Ernst Haeckel"),
            ("Q68753", "student of", "Ernst Haeckel"),
            ("Q68753", "nominated for", "Nobel Prize in Physiology or Medicine"),
        ],
    },
    {
        "id": "demo-simeone",
        "reference": "Diego Simeone played as a midfielder for Atlético Madrid and S.S. Lazio. His son Giovanni Simeone was born in Madrid and became a forward.",
        "general": "How did Diego Simeone's career influence his son Giovanni's path in football?",
        "specific": "Which clubs and positions did Diego Simeone play, and how did the career of his son Giovanni Simeone, born in Madrid, differ?",
        "people": ["Q258115", "Q6439494"],
        "minimum": [
            ("Q6439494", "father", "Diego Simeone"),
            ("Q6439494", "place of birth", "Madrid"),
            ("Q258115", "member of sports team", "Atlético Madrid"),
            ("Q258115", "member of sports team", "S.S. Lazio"),
            ("Q258115", "position played on team / speciality", "midfielder"),
            ("Q6439494", "position played on team / speciality", "forward"),
        ],
    },
    {
        "id": "demo-crane",
        "reference": "Stephen Crane was a writer of literary realism, known for The Red Badge of Courage. He was educated at Syracuse University and died of tuberculosis.",
        "general": "Who was Stephen Crane and what shaped his writing?",
        "specific": "What did the writer Stephen Crane publish, which movement did he belong to, where did he study, and what illness ended his life?",
        "people": ["Q206534"],
        "minimum": [
            ("Q206534", "notable work", "The Red Badge of Courage"),
            ("Q206534", "movement", "literary realism"),
            ("Q206534", "educated at", "Syracuse University"),
            ("Q206534", "cause of death", "tuberculosis"),
            ("Q206534", "occupation", "writer"),
        ],
    },
    {
        "id": "demo-crane-baseball",
        "reference": "While studying at Syracuse University, the writer Stephen Crane played baseball for the Syracuse Orange baseball team.",
        "general": "Did the writer Stephen Crane play baseball?",
        "specific": "Which baseball team did the writer Stephen Crane play for while at Syracuse University?",
        "people": ["Q206534"],
        "minimum": [
            ("Q206534", "sport", "baseball"),
            ("Q206534", "member of sports team", "Syracuse Orange baseball"),
            ("Q206534", "educated at", "Syracuse University"),
        ],
    },
    {
        "id": "demo-orazio-pisa",
        "reference": "Orazio Gentileschi was a painter born in Pisa, a follower of mannerism, and the father of Artemisia Gentileschi.",
        "general": "Who was Orazio Gentileschi?",
        "specific": "Was Orazio Gentileschi, the painter born in Pisa, the father of Artemisia Gentileschi, and which movement did he follow?",
        "people": ["Q367360"],
        "minimum": [
            ("Q367360", "place of birth", "Pisa"),
            ("Q367360", "occupation", "painter"),
            ("Q367360", "child", "Artemisia Gentileschi"),
            ("Q367360", "movement", "mannerism"),
        ],
    },
]


def demo_entries(source: KnowledgeSource) -> list[DatasetEntry]:
    people = sorted({q for d in DEMO_QUESTIONS for q in d["people"]})
    graphs = source.subgraphs(people)
    entries = []
    for d in DEMO_QUESTIONS:
        pool = KnowledgeGraph(entities=[graphs[q] for q in d["people"]])
        index = {(t.subject, t.relation_label, t.value_label): t for t in pool.triples()}
        missing = [f for f in d["minimum"] if f not in index]
        if missing:
            raise ValueError(f"demo question {d['id']}: the snapshot lacks {missing}")
        minimum = [index[f] for f in d["minimum"]]
        entries.append(
            DatasetEntry(
                id=d["id"],
                general_question=d["general"],
                specific_question=d["specific"],
                people=list(d["people"]),
                knowledge_pool=pool,
                minimum_set=minimum,
                reference=d["reference"],
                meta={"source": "kalma demo questions (hand-written)"},
            )
        )
    return entries
