"""What a judge's reports say (evaluation/identity.py, bench/sensitivity.py): what ran, named in every
report that used it (an LLM judging entailment is that LLM's weights, dtype and device, a packaged
model names its package's version); a limited board, an undefined tau and a failed run said, not hidden."""

from __future__ import annotations

from . import Mutation

SENS = "tests/e2e/test_judge_sensitivity.py"
PACKAGED = (f"{SENS}::test_a_packaged_llm_judge_is_named_by_what_ran",)
FLAT = (f"{SENS}::test_a_flat_judge_says_why_tau_is_undefined_and_how_often",)
LIMITED = (f"{SENS}::test_a_limited_board_is_said_and_a_failed_run_leaves_no_staging",)

MUTATIONS = (
    Mutation(
        "an llm: judge named by itself, not by the LLM that ran ('a served model')",
        "evaluation/identity.py",
        '    inner = getattr(model, "llm", None)\n',
        "    inner = None\n",
        PACKAGED,
    ),
    Mutation(
        "a packaged model's weights without the package's version",
        "evaluation/identity.py",
        '    packaged = PACKAGED.get(spec.split(",")[0])\n',
        "    packaged = None\n",
        PACKAGED,
    ),
    Mutation(
        "submissions filed with --limit re-scored without a word",
        "bench/sensitivity.py",
        '        "limited": {s: per[s].limit for per in runs.values() for s in systems if per[s].limit is not None},',
        '        "limited": {},',
        LIMITED,
    ),
    Mutation(
        "a failed run's staging folder left in the board",
        "bench/sensitivity.py",
        "        shutil.rmtree(staging, ignore_errors=True)\n        raise",
        "        raise",
        LIMITED,
    ),
    Mutation(
        "tau n/a without its reason",
        "bench/sensitivity.py",
        "if len({val for val in v if val is not None}) <= 1]",
        "if False]",
        FLAT,
    ),
    Mutation(
        "the undefined resamples not counted in sensitivity.md",
        "bench/sensitivity.py",
        '            undefined = f"; undefined in',
        '            undefined = "" and f"; undefined in',
        FLAT,
    ),
    Mutation(
        "judge.md without what ran",
        "evaluation/judge_cli.py",
        '    text += "\\n".join(["", "What ran:", "",',
        '    text += "" and "\\n".join(["", "What ran:", "",',
        ("tests/unit/test_judge_quality.py::test_judge_md_names_what_ran",),
    ),
)
