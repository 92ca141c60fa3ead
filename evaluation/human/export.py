"""Annotation files out: a CSV a spreadsheet opens cleanly, and Label Studio's task import with
the labelling config that goes with it.

Blinded: a row or task holds the unit id, the sample's digest, what `Unit.shown` holds and
empty label cells, never the model or what the automatic metric said. Every text cell is made
formula-safe (a spreadsheet never runs `=…` a model wrote).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from kalma.frames import csv_safe
from kalma.jsonl import dumps

from .units import LABELS, Sample

CSV_NAME, TASKS_NAME, CONFIG_NAME, GUIDE_NAME = "annotate.csv", "label-studio-tasks.json", "label-studio-config.xml", "instructions.md"
WRITES = (CSV_NAME, TASKS_NAME, CONFIG_NAME, GUIDE_NAME)  # all an export folder holds: --overwrite replaces nothing else
NONE_CHOICE = "none of these lines is necessary"

INSTRUCTIONS = {
    "alignment": (
        "Read the sentence and the piece of knowledge cited for it. Say `supported` (1) when the knowledge supports what the "
        "sentence says (the sentence states it, or it follows from it), and `not supported` (0) when it does not (unrelated, "
        "contradicted, or only partly related). Judge the pair alone: ignore whether the sentence is true in the world."
    ),
    "dataset": (
        "For each question, first read about the people it mentions. `authenticity`: 1 when the question matches their story, "
        "0 when it contradicts it. `naturalness` (1-5): 5 when it is concise and easy to understand, 1 when it is not natural "
        "English or extremely tedious. `significance` (1-5): 5 when you could be interested in this question, 1 when not. "
        "`necessary`: the knowledge lines needed to answer it (or `none`); each line not needed is redundant."
    ),
}


def csv_columns(task: str) -> list[str]:
    shown = ["sentence", "knowledge"] if task == "alignment" else ["question", "knowledge"]
    return ["unit_id", "sample", *shown, *LABELS[task], "annotator", "comment"]


def _shown(task: str, shown: dict[str, Any]) -> dict[str, str]:
    """Unit.shown as cell text: a dataset unit's knowledge numbered one per line."""
    if task == "dataset":
        knowledge: list[str] = shown.get("knowledge") or []
        return {"question": str(shown["question"]), "knowledge": "\n".join(f"{i}. {k}" for i, k in enumerate(knowledge, start=1))}
    return {k: str(v) for k, v in shown.items()}


def write_csv(sample: Sample, path: Path) -> None:
    cols = csv_columns(sample.task)
    with path.open("w", newline="", encoding="utf-8-sig") as fh:  # the BOM makes spreadsheets read UTF-8
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        for u in sample.units:
            row = {"unit_id": u.unit_id, "sample": sample.digest, **_shown(sample.task, u.shown)}
            w.writerow({c: csv_safe(row.get(c, "")) for c in cols})


def label_studio_config(task: str) -> str:
    """The labelling interface; choices carry aliases so that exports hold 1/0, not prose."""
    guide = quoteattr(INSTRUCTIONS[task])
    if task == "alignment":
        body = """  <Header value="Does the knowledge support the sentence?"/>
  <Text name="sentence" value="$sentence"/>
  <Header value="Cited knowledge" size="5"/>
  <Text name="knowledge" value="$knowledge"/>
  <Choices name="supported" toName="sentence" choice="single-radio" required="true">
    <Choice value="supported" alias="1"/>
    <Choice value="not supported" alias="0"/>
  </Choices>"""
    else:
        body = """  <Text name="question" value="$question"/>
  <Header value="Minimum knowledge set: tick what is necessary to answer" size="5"/>
  <Text name="knowledge" value="$knowledge_text"/>
  <Choices name="necessary" toName="question" choice="multiple" value="$knowledge_options" required="true"/>
  <Choices name="authenticity" toName="question" choice="single-radio" required="true">
    <Choice value="matches the story" alias="1"/>
    <Choice value="contradicts it" alias="0"/>
  </Choices>
  <Rating name="naturalness" toName="question" maxRating="5" required="true"/>
  <Rating name="significance" toName="question" maxRating="5" required="true"/>"""
    return f'<View>\n  <Header value={guide} size="6"/>\n{body}\n</View>\n'


def label_studio_tasks(sample: Sample) -> list[dict[str, Any]]:
    tasks = []
    for u in sample.units:
        data: dict[str, object] = {"unit_id": u.unit_id, "sample": sample.digest, **_shown(sample.task, u.shown)}
        if sample.task == "dataset":
            lines = str(data.pop("knowledge")).splitlines()
            data["knowledge_text"] = "\n".join(lines)
            # "none" is a choice of its own: an empty multi-choice writes nothing to the export, which
            # could as well be a question nobody looked at
            data["knowledge_options"] = [{"value": line.split(". ", 1)[0], "html": line} for line in lines] + [{"value": "none", "html": NONE_CHOICE}]
        tasks.append({"data": data})
    return tasks


def export(sample: Sample, out_dir: str | Path) -> list[Path]:
    """Write the CSV, the Label Studio tasks and config, and the instructions into `out_dir`."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / CSV_NAME, out / TASKS_NAME, out / CONFIG_NAME, out / GUIDE_NAME]
    write_csv(sample, paths[0])
    paths[1].write_text(dumps(label_studio_tasks(sample), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    paths[2].write_text(label_studio_config(sample.task), encoding="utf-8")
    title = "Text-citation alignment" if sample.task == "alignment" else "Dataset quality"
    cells = (
        "`supported`: 1 or 0"
        if sample.task == "alignment"
        else "`authenticity` 0 or 1, `naturalness` and `significance` 1 to 5, `necessary` the line numbers (e.g. 1,3) or `none`"
    )
    paths[3].write_text(
        f"# {title}: instructions\n\n{INSTRUCTIONS[sample.task]}\n\nIn {CSV_NAME}: fill {cells}; put your name in `annotator` "
        f"(else the file's name is taken); leave a unit's cells empty to skip it. Keep `unit_id` and `sample` as they are.\n\n"
        f"Sample {sample.digest}, {len(sample.units)} units.\n",
        encoding="utf-8",
    )
    return paths
