"""`table:FILE`: entailment judgements read from a file instead of computed by a model.

Use it to score with human labels (the paper's human evaluation), or to make a worked example
exact without a model. FILE is JSONL, one judgement per line:

    {"premise": "Artemisia Gentileschi was born in Rome.", "hypothesis": "place of birth: Rome", "label": "entailment"}
    {"premise": "She liked music.", "hypothesis": "Who was Artemisia Gentileschi?", "probability": 0.0}

`label` is `entailment`/`neutral`/`contradiction`, `yes`/`no`, true/false or 1/0;
`probability` is P(entailment) in [0, 1]. Pairs match after whitespace and NFC normalisation.
The premise is a sentence with its citations removed; the hypothesis is `relation: value` (or
the verbalised triple with `--verbalized`), or, for the [NA] relevance judgement, the question.
A pair the table lacks is an error that names it: nothing is guessed. With `unjudged=skip`
(`table:majority.jsonl,unjudged=skip`) such a pair gets no judgement (NaN) instead: the alignment
metric leaves it out and counts it, so that a sample's human labels score the pairs people
judged; the other metrics refuse a backend that abstains.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from ..errors import KalmaError
from ..schema import normalize_text
from .base import Entailment

_YES = {"entailment", "entailed", "yes", "true", "1"}
_NO = {"neutral", "contradiction", "not entailment", "not_entailment", "no", "false", "0"}


class MissingJudgement(KalmaError, ValueError):
    """A pair the table lacks; `missing` names it, and the message says how `kalma evaluate` goes on
    (a command with other options says its own)."""

    def __init__(self, missing: str, hint: str):
        super().__init__(missing + hint)
        self.missing = missing


def _probability(path: Path, line: int, row: dict[str, object]) -> float:
    if "probability" in row:
        p = row["probability"]
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= float(p) <= 1.0:
            raise ValueError(f"{path}:{line}: field 'probability': a number in [0, 1], got {p!r}")
        return float(p)
    label = str(row.get("label", "")).strip().lower()
    if label in _YES:
        return 1.0
    if label in _NO:
        return 0.0
    raise ValueError(f"{path}:{line}: field 'label': entailment/neutral/contradiction, yes/no, true/false or 1/0, got {row.get('label')!r}")


class TableEntailment(Entailment):
    cacheable = False  # the judgements already live on disk; caching them would only go stale
    batch_size = 4096

    def __init__(self, path: str | Path, unjudged: Literal["error", "skip"] = "error"):
        self.path = Path(path)
        self.abstains = unjudged == "skip"
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            raise ValueError(f"table entailment: cannot read {path}: {exc.strerror or exc}") from exc
        self.spec = f"table:{path}" + (",unjudged=skip" if self.abstains else "")
        self.digest = hashlib.sha256(data).hexdigest()[:12]
        self.table: dict[tuple[str, str], float] = {}
        for line, raw in enumerate(data.decode("utf-8-sig", errors="replace").splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{self.path}:{line}: invalid JSON ({exc.msg})") from exc
            if not isinstance(row, dict):
                raise ValueError(f"{self.path}:{line}: expected a JSON object")
            for key in ("premise", "hypothesis"):
                if not isinstance(row.get(key), str):
                    raise ValueError(f"{self.path}:{line}: field '{key}': a string is required")
            self.table[(normalize_text(row["premise"]), normalize_text(row["hypothesis"]))] = _probability(self.path, line, row)

    def _entail(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        out = []
        for p, h in pairs:
            key = (normalize_text(p), normalize_text(h))
            if key not in self.table and not self.abstains:
                hint = "; to score only the pairs it judges, give `table:FILE,unjudged=skip` with --metrics alignment"
                raise MissingJudgement(f"{self.path}: no judgement for premise {p!r} and hypothesis {h!r}", hint)
            out.append(self.table.get(key, math.nan))
        return out
