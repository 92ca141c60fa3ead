"""NER over the release's questions: the share of each question's people whose full name the
baseline finds as one mention, with name particles only ("de", "van": the earlier rule) and with
"the" and "of" inside names too ("Louis the Stammerer", "Catherine of Aragon"). Both run in one
process against the imported release (pyoxigraph), with the same spaCy model.

    python -m perf.ner_bench
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from .common import report, require_biokalma, timed


def main() -> None:
    from baselines.ner import CONNECTORS, NER, PARTICLES
    from kalma.biokalma import release_entries
    from kalma.kg.local import OxigraphSource
    from kalma.kg.snapshot import import_biokalma

    data = require_biokalma()
    entries = release_entries(data / "complex_question_graph.json")
    questions = [e.specific_question for e in entries]
    people = [[g.label for g in e.knowledge_pool.entities] for e in entries]
    # people whose names hold " the " or " of ": the cases the rule is for
    joined = [[n for n in names if re.search(r" (the|of) ", n)] for names in people]
    rows: dict[str, object] = {"questions": len(questions), "people": sum(map(len, people))}
    with tempfile.TemporaryDirectory() as tmp:
        snap = Path(tmp) / "biokalma.nt"
        import_biokalma(data / "complex_question_graph.json", snap)
        source = OxigraphSource(snap)
        for label, connectors in (("particles only (before)", PARTICLES), ("with 'the' and 'of' (after)", CONNECTORS)):
            seconds, mentions = timed(lambda: NER(source, connectors=connectors)(questions))
            found = [{m.text for m in ms} for ms in mentions]
            named = [(name, f) for names, f, q in zip(people, found, questions) for name in names if name in q]
            special = [(name, f) for names, f, q in zip(joined, found, questions) for name in names if name in q]
            whole = sum(name in f for name, f in named)
            rows[f"{label}: people named in their question, found as one span"] = f"{whole} of {len(named)} ({100 * whole / len(named):.1f}%)"
            rows[f"{label}: of those named with 'the' or 'of'"] = f"{sum(name in f for name, f in special)} of {len(special)}"
            rows[f"{label}: seconds"] = seconds
    report("ner_bench", rows)


if __name__ == "__main__":
    main()
