"""Issue 65 §1, through the CLI: behaviours of `kalma judge pairs`, `kalma compare`, the served
model's wait and `kalma records from-kg`, each on a case where the wrong computation gives another
answer (the mutations that break them are kept in tests/mutations/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kalma.cli import main
from tests.e2e.test_judge_pairs import generate


@pytest.fixture(scope="module")
def seeded(dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[int, list[dict]]:
    """The demo dataset's pairs drawn under two seeds."""
    d = tmp_path_factory.mktemp("seeded")
    return {seed: generate(dataset, d / f"pairs-{seed}.jsonl", "--seed", str(seed)) for seed in (1, 2)}


def test_judge_pairs_seed_changes_every_kinds_draw(seeded):
    """Not only knowledge removal's `na` rows: the triples stated and cited for the other kinds
    follow --seed too, and each row records the seed it was drawn with."""
    drawn = {s: sorted((r["entry_id"], r["kind"], r["judged"], r["stated"]) for r in rows if r["kind"] != "na") for s, rows in seeded.items()}
    assert drawn[1] != drawn[2]
    assert all(r["seed"] == s for s, rows in seeded.items() for r in rows)


def test_judge_pairs_draw_from_the_entrys_minimum_set(seeded, dataset: Path):
    """Every demo entry has a minimum set smaller than its people's knowledge in the KG: every
    triple a supported, partial or na row states is in it (contradictory rows state a replacement,
    irrelevant rows may cite another entity)."""
    minimum = {}
    for line in dataset.read_text().splitlines()[1:]:
        e = json.loads(line)
        minimum[e["id"]] = {(t["subject"], t["relation"] or t["relation_label"], t["value"]) for t in e["minimum_set"]}
    for rows in seeded.values():
        kept = [r for r in rows if r["kind"] in {"supported", "partial", "na"}]
        assert kept and all(tuple(s) in minimum[r["entry_id"]] for r in kept for s in r["stated"])


def test_judge_pairs_discards_and_counts_a_reply_of_two_sentences(dataset: Path, tmp_path: Path):
    """A writer that adds a second sentence to every reply: nothing is kept, and the refusal counts
    the sentences discarded, by kind."""
    from evaluation.judge_pairs import _template_state
    from tests.servers import answering, scripted_server

    with scripted_server([answering(lambda prompt: _template_state(prompt) + " It is well known.")]) as (url, _):
        res = CliRunner().invoke(main, ["judge", "pairs", "--dataset", str(dataset), "--llm", f"openai-compatible:{url}/v1:w", "-o", str(tmp_path / "p.jsonl")])
    assert res.exit_code != 0 and "no usable sentence" in res.output and "6 supported: not one sentence" in res.output, res.output
    assert not (tmp_path / "p.jsonl").exists()
