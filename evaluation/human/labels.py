"""Annotators' work back in: the exported CSV, filled in, and Label Studio's JSON exports (full
`JSON` and flat `JSON_MIN`), any number of annotators.

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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .units import LABELS, HumanError, Label, Sample

_YES, _NO = {"1", "yes", "y", "true", "supported"}, {"0", "no", "n", "false", "not supported"}
_NUMBER = re.compile(r"^\s*[0-9]+(?:\.0*)?\s*$")


def _fail(where: str, field: str, message: str) -> HumanError:
    return HumanError(f"{where}: field '{field}': {message}")


def _value(task: str, field: str, raw: Any, where: str, knowledge: int) -> Any:
    """One label as its canonical value (an int, or for `necessary` the sorted line numbers)."""
    allowed = LABELS[task][field]
    if field == "necessary":
        return _necessary(raw, where, knowledge)
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
    if isinstance(raw, dict):
        raw = raw.get("choices", [])
    parts = [str(p) for p in raw] if isinstance(raw, list) else [p for p in re.split(r"[,;\s]+", str(raw).strip()) if p]
    if [p.lower() for p in parts] == ["none"]:
        return []
    out = set()
    for p in parts:
        number = p.split(".", 1)[0].strip()  # a choice may come back as its text, "3. Rome …"
        if not number.isdigit() or not 1 <= int(number) <= knowledge:
            raise _fail(where, "necessary", f"{p!r} is not a knowledge line number from 1 to {knowledge} (or `none`)")
        out.add(int(number))
    return sorted(out)


def _labels(sample: Sample, unit_id: str, found: dict[str, Any], where: str) -> dict[str, Any] | None:
    """The labels of one row, checked; None when the row holds no label at all (unlabelled)."""
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
        elif field == "necessary" and (knowledge == 0 or field in found):  # nothing to tick, or Label Studio's none ticked
            out[field] = []
        else:
            raise _fail(where, field, "empty, but the row's other labels are filled: label every field of a unit, or none")
    return out


def _check_unit(sample: Sample, unit_id: Any, digest: Any, where: str) -> str:
    if digest is not None and str(digest).strip() != sample.digest:
        raise _fail(where, "sample", f"{digest!r} is another sample's digest (this sample: {sample.digest}): annotations of another export")
    uid = str(unit_id or "").strip()
    if uid not in sample.by_id:
        raise _fail(where, "unit_id", f"{uid!r} was never sampled in {sample.path or 'this sample'}")
    return uid


def read_csv(sample: Sample, path: Path) -> list[Label]:
    text = path.read_bytes().decode("utf-8-sig", errors="strict")
    rows = list(csv.reader(text.splitlines(keepends=True)))
    if not rows or not any(cell.strip() for row in rows for cell in row):
        raise HumanError(f"{path}:1: empty file: expected the CSV that `kalma human export` wrote, filled in")
    head = [h.strip() for h in rows[0]]
    for needed in ("unit_id", "sample", *LABELS[sample.task]):
        if needed not in head:
            raise _fail(f"{path}:1", needed, f"no such column (columns: {', '.join(head)})")
    out = []
    line = 1
    for row in rows[1:]:
        line += 1
        if not any(cell.strip() for cell in row):
            continue
        cells = dict(zip(head, row))
        where = f"{path}:{line}"
        uid = _check_unit(sample, cells.get("unit_id"), cells.get("sample", ""), where)
        labels = _labels(sample, uid, cells, where)
        if labels is not None:
            annotator = (cells.get("annotator") or "").strip() or path.stem
            out.append(Label(unit_id=uid, annotator=annotator, labels=labels, source=where))
    return out


def _ls_user(who: Any) -> str:
    if isinstance(who, dict):
        return str(who.get("email") or who.get("username") or f"label-studio-user-{who.get('id')}")
    return f"label-studio-user-{who}"


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


def read_label_studio(sample: Sample, path: Path) -> list[Label]:
    try:
        items = json.loads(path.read_bytes().removeprefix(codecs.BOM_UTF8).decode("utf-8") or "null")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
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
                labels = _labels(sample, uid, _ls_result(ann.get("result"), at), at)
                if labels is not None:
                    out.append(Label(unit_id=uid, annotator=_ls_user(ann.get("completed_by")), labels=labels, source=at))
        else:  # JSON_MIN: one flat object per annotation
            uid = _check_unit(sample, task.get("unit_id"), task.get("sample"), where)
            labels = _labels(sample, uid, task, where)
            if labels is not None:
                out.append(Label(unit_id=uid, annotator=str(task.get("annotator") or path.stem), labels=labels, source=where))
    return out


def read_annotations(sample: Sample, paths: Sequence[str | Path]) -> list[Label]:
    """Every label in `paths`, checked across files: one file per annotator, one label per unit
    and annotator."""
    labels: list[Label] = []
    owner: dict[str, Path] = {}
    for p in map(Path, paths):
        if not p.is_file():
            raise HumanError(f"{p}: no such file")
        if p.stat().st_size == 0:
            raise HumanError(f"{p}:1: empty file (0 bytes)")
        found = read_label_studio(sample, p) if p.suffix.lower() == ".json" else read_csv(sample, p)
        if not found:
            raise HumanError(f"{p}: no unit is labelled in it")
        for who in dict.fromkeys(lb.annotator for lb in found):
            if who in owner:
                raise HumanError(f"{p}: annotator {who!r} also has labels in {owner[who]}: give each annotator's work once")
            owner[who] = p
        labels += found
    seen: dict[tuple[str, str], str] = {}
    for lb in labels:
        key = (lb.unit_id, lb.annotator)
        if key in seen:
            raise HumanError(f"{lb.source}: field 'unit_id': {lb.unit_id} is labelled twice by {lb.annotator!r} (first at {seen[key]})")
        seen[key] = lb.source
    return labels


def unlabelled(sample: Sample, labels: Sequence[Label]) -> list[str]:
    """The units no annotator labelled, in sample order."""
    done = {lb.unit_id for lb in labels}
    return [u.unit_id for u in sample.units if u.unit_id not in done]
