"""Annotators' work back in: the exported CSV, filled in, and every export Label Studio's server
writes (tests/fixtures/label_studio holds one of each, captured from a real server):

- `JSON` (task data, then each annotation with `completed_by` and its result list), `JSON_MIN`
  (one flat object per annotation: Choices flattened, a Rating still `[{"rating": 3}]`), and its
  `CSV` and `TSV` (JSON_MIN's columns, nested values as JSON text; the TSV is downloaded with a
  `.csv` name). The format is read from the content, never from the file's name.
- Annotators: the export the web UI uses names them by user id, which is a number per server;
  the snapshot export API by e-mail. An id is read as `label-studio user N`, the same in every
  format, and never mistaken for an e-mail. `--annotator FILE=NAME` (or `FILE#ID=NAME` for one of
  several) names them.
- Every Label Studio annotation carries its id and creation time: the same annotation read twice
  (one project's JSON and JSON_MIN given together) is refused, whatever the formats.

Every bad row is an error naming the file, the line (a CSV's line, or a JSON export's item) and
the field: a label outside its set, a unit id that was never sampled, a row of another sample
(its digest differs), one annotator's labels in two files, a unit labelled twice by one
annotator, an empty file. Nothing is written unless every file reads cleanly. A unit no one
labelled is reported, never dropped in silence.
"""

from __future__ import annotations

import codecs
import csv
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .units import LABELS, HumanError, Label, Sample

_YES, _NO = {"1", "yes", "y", "true", "supported"}, {"0", "no", "n", "false", "not supported"}
_NUMBER = re.compile(r"^\s*[0-9]+(?:\.0*)?\s*$")
LS_USER = "label-studio user "  # how an annotator Label Studio names only by user id is recorded


def _fail(where: str, field: str, message: str) -> HumanError:
    return HumanError(f"{where}: field '{field}': {message}")


def _unwrap(raw: Any) -> Any:
    """A label as Label Studio's flat exports hold it: `[{"rating": 3}]`, `{"choices": [...]}`, or
    either as JSON text in a CSV cell; a single choice as itself."""
    if isinstance(raw, str) and raw.strip()[:1] in ("[", "{"):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            return raw
    if isinstance(raw, list) and len(raw) == 1 and isinstance(raw[0], dict):
        raw = raw[0]
    if isinstance(raw, dict) and "rating" in raw:
        return raw["rating"]
    if isinstance(raw, dict) and "choices" in raw:
        return raw["choices"]
    return raw


def _value(task: str, field: str, raw: Any, where: str, knowledge: int) -> Any:
    """One label as its canonical value (an int, or for `necessary` the sorted line numbers)."""
    allowed = LABELS[task][field]
    raw = _unwrap(raw)
    if field == "necessary":
        return _necessary(raw, where, knowledge)
    if isinstance(raw, list) and len(raw) == 1:
        raw = raw[0]
    text = str(raw).strip().lower() if not isinstance(raw, bool) else str(int(raw))
    if allowed == (0, 1) and text in _YES | _NO:
        return int(text in _YES)
    if isinstance(raw, (int, float)) and not isinstance(raw, bool) and float(raw).is_integer():
        text = str(int(raw))
    if _NUMBER.match(text) and int(float(text)) in allowed:  # type: ignore[operator]
        return int(float(text))
    shown = "/".join(map(str, allowed or ()))
    raise _fail(where, field, f"{raw!r} is not one of {shown}" + (" (or yes/no)" if allowed == (0, 1) else ""))


def _necessary(raw: Any, where: str, knowledge: int) -> list[int]:
    """Which knowledge lines are necessary: `1,3`, `none`, or Label Studio's list of choices."""
    parts = [str(p) for p in raw] if isinstance(raw, list) else [p for p in re.split(r"[,;\s]+", str(raw).strip()) if p]
    lowered = [p.strip().lower() for p in parts]
    if "none" in lowered:
        if len(parts) > 1:
            raise _fail(where, "necessary", f"'none' ticked together with lines {', '.join(p for p in parts if p.lower() != 'none')}: tick lines, or none")
        return []
    out = set()
    for p in parts:
        number = p.split(".", 1)[0].strip()  # a choice may come back as its text, "3. Rome …"
        if not number.isdigit() or not 1 <= int(number) <= knowledge:
            raise _fail(where, "necessary", f"{p!r} is not a knowledge line number from 1 to {knowledge} (or `none`)")
        out.add(int(number))
    return sorted(out)


def _labels(sample: Sample, unit_id: str, found: dict[str, Any], where: str, *, label_studio: bool) -> dict[str, Any] | None:
    """The labels of one row, checked; None when the row holds no label at all (unlabelled). In a
    Label Studio export an unticked multi-choice leaves no trace, so no `necessary` there means
    no line ticked; in the exported CSV a label is never left empty."""
    task = sample.task
    given = {k: v for k, v in found.items() if k in LABELS[task] and v not in (None, "", [])}
    if not given:
        return None
    unit = sample.by_id[unit_id]
    knowledge = len(unit.shown.get("knowledge") or []) if task == "dataset" else 0
    out = {}
    for field in LABELS[task]:
        if field in given:
            out[field] = _value(task, field, given[field], where, knowledge)
        elif field == "necessary" and (knowledge == 0 or label_studio):
            out[field] = []
        else:
            raise _fail(where, field, "empty, but the row's other labels are filled: label every field of a unit, or none")
    return out


def _check_unit(sample: Sample, unit_id: Any, digest: Any, where: str) -> str:
    if digest is not None and not str(digest).strip():
        raise _fail(where, "sample", f"empty: every exported row carries the sample's digest ({sample.digest}); was this row added by hand?")
    if digest is not None and str(digest).strip() != sample.digest:
        raise _fail(where, "sample", f"{digest!r} is another sample's digest (this sample: {sample.digest}): annotations of another export")
    uid = str(unit_id or "").strip()
    if uid not in sample.by_id:
        raise _fail(where, "unit_id", f"{uid!r} was never sampled in {sample.path or 'this sample'}")
    return uid


@dataclass(frozen=True)
class Who:
    """An annotator as a file names her: `user` is Label Studio's user id when that is all it says."""

    name: str
    user: str | None = None


def _annotator(raw: Any, fallback: str) -> Who:
    """`completed_by` or `annotator` as Label Studio writes it: an id (a number), an e-mail, or
    (snapshot JSON) an object holding both."""
    if isinstance(raw, dict):
        raw = raw.get("email") or raw.get("username") or raw.get("id")
    text = str(raw).strip() if raw is not None and not isinstance(raw, bool) else ""
    if text.isdigit():
        return Who(LS_USER + text, text)
    return Who(text or fallback)


def _label(uid: str, who: Who, labels: dict[str, Any], where: str, ann_id: Any, created: Any) -> Label:
    annotation = f"{ann_id} created {created}" if ann_id not in (None, "") else ""
    return Label(unit_id=uid, annotator=who.name, labels=labels, source=where, annotation=annotation, user=who.user or "")


def read_csv(sample: Sample, path: Path, text: str) -> list[Label]:
    """The exported CSV filled in, or Label Studio's CSV or TSV export (read by its columns)."""
    first = text.split("\n", 1)[0]
    rows = list(csv.reader(text.splitlines(keepends=True), delimiter="\t" if first.count("\t") > first.count(",") else ","))
    if not rows or not any(cell.strip() for row in rows for cell in row):
        raise HumanError(f"{path}:1: empty file: expected the CSV that `kalma human export` wrote, filled in")
    head = [h.strip() for h in rows[0]]
    label_studio = "annotation_id" in head and "annotator" in head
    if not any(cell.strip() for row in rows[1:] for cell in row):
        kind = "a Label Studio export of tasks no one has annotated" if "unit_id" in head and "id" in head else "a header"
        raise HumanError(f"{path}:1: no row below the header ({kind}): label the tasks first, then export again")
    needed = ("unit_id", "sample") + (() if label_studio else tuple(LABELS[sample.task]))
    for field in needed:
        if field not in head:
            raise _fail(
                f"{path}:1",
                field,
                f"no such column (columns: {', '.join(head)[:200]}): give the CSV that `kalma human export` wrote, filled in, or a Label Studio export",
            )
    out = []
    line = 1 + sum(cell.count("\n") for cell in rows[0])
    for row in rows[1:]:
        where = f"{path}:{line + 1}"
        line += 1 + sum(cell.count("\n") for cell in row)  # a quoted cell may hold line breaks
        if not any(cell.strip() for cell in row):
            continue
        cells = dict(zip(head, row))
        uid = _check_unit(sample, cells.get("unit_id"), cells.get("sample", ""), where)
        labels = _labels(sample, uid, cells, where, label_studio=label_studio)
        if labels is not None:
            who = _annotator(cells.get("annotator"), path.stem) if label_studio else Who((cells.get("annotator") or "").strip() or path.stem)
            out.append(_label(uid, who, labels, where, cells.get("annotation_id"), cells.get("created_at")))
    return out


def _ls_result(results: Any, where: str) -> dict[str, Any]:
    """Label Studio's region list as {control name: value}."""
    if not isinstance(results, list):
        raise _fail(where, "result", "expected a list of results")
    found: dict[str, Any] = {}
    for r in results:
        if not isinstance(r, dict) or not isinstance(r.get("value"), dict):
            raise _fail(where, "result", f"unreadable result {r!r}")
        name, value = str(r.get("from_name", "")), r["value"]
        if "rating" in value:
            found[name] = value["rating"]
        elif "choices" in value:
            choices = value["choices"]
            found[name] = choices if name == "necessary" else (choices[0] if len(choices) == 1 else choices)
    return found


def read_label_studio(sample: Sample, path: Path, text: str) -> list[Label]:
    try:
        items = json.loads(text or "null")
    except json.JSONDecodeError as exc:
        raise HumanError(f"{path}:1: not a Label Studio JSON export ({exc})") from None
    if not isinstance(items, list) or not items:
        raise HumanError(f"{path}:1: {'empty export' if items == [] else 'not a Label Studio JSON export (a list of tasks)'}")
    out = []
    for n, task in enumerate(items, start=1):
        where = f"{path}: item {n}"
        if not isinstance(task, dict):
            raise HumanError(f"{where}: expected a task object")
        if "annotations" in task:  # the full JSON export: task data, then every annotation
            data: dict[str, Any] = task["data"] if isinstance(task.get("data"), dict) else {}
            uid = _check_unit(sample, data.get("unit_id"), data.get("sample"), where)
            for k, ann in enumerate(task["annotations"] or [], start=1):
                at = f"{where}, annotation {k}"
                if not isinstance(ann, dict) or ann.get("was_cancelled"):
                    continue
                labels = _labels(sample, uid, _ls_result(ann.get("result"), at), at, label_studio=True)
                if labels is not None:
                    who = _annotator(ann.get("completed_by"), path.stem)
                    out.append(_label(uid, who, labels, at, ann.get("id"), ann.get("created_at")))
        else:  # JSON_MIN: one flat object per annotation
            uid = _check_unit(sample, task.get("unit_id"), task.get("sample"), where)
            labels = _labels(sample, uid, task, where, label_studio=True)
            if labels is not None:
                out.append(_label(uid, _annotator(task.get("annotator"), path.stem), labels, where, task.get("annotation_id"), task.get("created_at")))
    return out


def _text(path: Path) -> str:
    raw = path.read_bytes()
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise HumanError(f"{path}:1: UTF-16 text (a spreadsheet's 'Unicode text'): save it as CSV UTF-8")
    try:
        return raw.removeprefix(codecs.BOM_UTF8).decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise HumanError(f"{path}:{line}: not UTF-8 (byte 0x{raw[exc.start]:02x}): save it as CSV UTF-8") from None


def parse_names(specs: Sequence[str]) -> dict[tuple[str, str | None], str]:
    """`--annotator FILE=NAME` (the one annotator of FILE) or `FILE#ID=NAME` (Label Studio user ID
    in FILE) as {(resolved file, ID or None): NAME}."""
    out: dict[tuple[str, str | None], str] = {}
    for spec in specs:
        target, sep, name = spec.rpartition("=")
        if not sep or not target or not name.strip():
            raise HumanError(f"--annotator {spec!r}: give FILE=NAME, or FILE#ID=NAME for Label Studio user ID in FILE")
        file, _, user = target.rpartition("#") if "#" in target else (target, "", "")
        out[(str(Path(file).resolve()), user or None)] = name.strip()
    return out


def _rename(path: Path, found: list[Label], names: Mapping[tuple[str, str | None], str]) -> list[Label]:
    key = str(path.resolve())
    mine = {u: n for (f, u), n in names.items() if f == key}
    if not mine:
        return found
    who = sorted({lb.annotator for lb in found})
    if None in mine and len(who) > 1:
        each = " ".join(f"--annotator {path}#{u}=NAME" for u in sorted({lb.user for lb in found if lb.user}))
        raise HumanError(f"--annotator {path}={mine[None]}: the file holds {len(who)} annotators ({', '.join(who)})" + (f": name each, {each}" if each else ""))
    users = {lb.user for lb in found}
    unknown = [u for u in mine if u is not None and u not in users]
    if unknown:
        raise HumanError(
            f"--annotator {path}#{unknown[0]}=…: no Label Studio user {unknown[0]} in {path} (its users: {', '.join(sorted(u for u in users if u))})"
        )

    def named(lb: Label) -> Label:
        # only those named lose their Label Studio id: another user of the file still needs it (ids are per server)
        name = mine.get(lb.user or None, mine.get(None))
        return lb.model_copy(update={"annotator": name, "user": ""}) if name else lb

    return [named(lb) for lb in found]


def read_annotations(sample: Sample, paths: Sequence[str | Path], names: Sequence[str] = ()) -> list[Label]:
    """Every label in `paths`, checked across files: each Label Studio annotation read once, one
    file per annotator, one label per unit and annotator. `names` are `--annotator` specs."""
    named = parse_names(names)
    given = {str(Path(p).resolve()) for p in paths}
    for file, _ in named:
        if file not in given:
            raise HumanError(f"--annotator names {file}, which is not among the files to import")
    labels: list[Label] = []
    for p in map(Path, paths):
        if not p.is_file():
            raise HumanError(f"{p}: no such file")
        if p.stat().st_size == 0:
            raise HumanError(f"{p}:1: empty file (0 bytes)")
        text = _text(p)
        found = read_label_studio(sample, p, text) if text.lstrip()[:1] in ("[", "{") else read_csv(sample, p, text)
        if not found:
            raise HumanError(f"{p}: no unit is labelled in it")
        labels += [lb.model_copy(update={"file": str(p)}) for lb in _rename(p, found, named)]
    check_across(labels)
    return labels


def check_across(labels: Sequence[Label], scoring: bool = False) -> None:
    """What holds across the exports read, whether they are imported together or their labels
    files scored together: each Label Studio annotation read once, each annotator's work from one
    export, one label per unit and annotator. `scoring`: the hints name `kalma human import`."""
    annotations: dict[str, str] = {}
    owner: dict[str, str] = {}
    seen: dict[tuple[str, str], str] = {}
    again = " (import those exports again, together: `kalma human import SAMPLE FILE… --annotator …`)" if scoring else ""
    for lb in labels:
        if lb.annotation and lb.annotation in annotations:
            raise HumanError(
                f"{lb.source}: field 'annotation_id': Label Studio annotation {lb.annotation} was already read from {annotations[lb.annotation]}: "
                "the same annotations in two exports (e.g. one project's JSON and JSON_MIN); give each export once" + again
            )
        if lb.annotation:
            annotations[lb.annotation] = lb.source
        file = lb.file or lb.source  # labels files of older imports say where only in `source`
        first = owner.setdefault(lb.annotator, file)
        if first != file and lb.user:
            raise HumanError(
                f"{file}: Label Studio user {lb.user} also has labels in {first}, and user ids are numbers per server: "
                f"if these are two people, name them (--annotator {first}#{lb.user}=NAME --annotator {file}#{lb.user}=OTHER), "
                "or export with e-mails (docs/human-evaluation.md); if one person, give her work once" + again
            )
        if first != file:
            raise HumanError(f"{file}: annotator {lb.annotator!r} also has labels in {first}: give each annotator's work once" + again)
        key = (lb.unit_id, lb.annotator)
        if key in seen:
            raise HumanError(f"{lb.source}: field 'unit_id': {lb.unit_id} is labelled twice by {lb.annotator!r} (first at {seen[key]})")
        seen[key] = lb.source


def unlabelled(sample: Sample, labels: Sequence[Label]) -> list[str]:
    """The units no annotator labelled, in sample order."""
    done = {lb.unit_id for lb in labels}
    return [u.unit_id for u in sample.units if u.unit_id not in done]
