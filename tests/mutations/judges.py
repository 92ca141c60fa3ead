"""The grounding checkers (kalma/models/checkers.py), the judge's meta-evaluation
(evaluation/judge_quality.py), and the memory and calibration steps that plan their batches: each
format, read-out, chunking rule and figure broken on purpose."""

from __future__ import annotations

from . import Mutation

MUTATIONS = (
    Mutation(
        "DeBERTa v1's max_relative_positions of -1 read as the span",
        "kalma/models/memory.py",
        "    return span if span >= 1 else int(",
        "    return span if span else int(",
        ("tests/unit/test_memory.py::test_deberta_v1_reads_its_span_as_transformers_does",),
    ),
    Mutation(
        "a DeBERTa v1 pass counted over every relative position, not at most its width",
        "kalma/models/memory.py",
        "            span = min(s.span, attended) if s.span_by_width else s.span",
        "            span = s.span",
        ("tests/unit/test_memory.py::test_deberta_v1_reads_its_span_as_transformers_does",),
    ),
    Mutation(
        "calibration not stopping at its slowest size",
        "kalma/models/calibration.py",
        "        if took >= slowest:\n            break",
        "        if took < 0:\n            break",
        ("tests/unit/test_cpu_policy.py::test_the_calibration_stops_at_its_slowest_pass",),
    ),
    Mutation(
        "calibration as a side effect of loading",
        "kalma/models/hf.py",
        "        tok, model, _ = self._loaded()\n        return tok, model",
        "        tok, model, _ = self._loaded()\n        self.rt\n        return tok, model",
        ("tests/unit/test_cpu_policy.py::test_the_calibration_measures_once_per_machine_and_model",),
    ),
)
