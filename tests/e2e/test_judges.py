"""Every grounding checker end to end on tiny random models of its architecture: `kalma evaluate
--nli CHECKER` on the demo dataset (alignment and [NA]), every report naming the checker, its
format and threshold; and `kalma judge evaluate --nli CHECKER` on the project's labelled set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kalma.cli import main
from tests import checker_models as cm

ANSWERS = [
    {
        "entry_id": "demo-crane",
        "text": "Stephen Crane wrote [Q206534, notable work: The Red Badge of Courage]. He was born in Boston [Q206534, place of birth: Newark].",
    },
    {"entry_id": "demo-gentileschi", "text": "Artemisia Gentileschi was born in Rome [Q212657, place of birth: Rome]. She liked music [NA]."},
]


@pytest.fixture(scope="module")
def checkers(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("checkers-e2e")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KALMA_MODEL_DIR", str(root / "converted"))
        yield cm.specs(cm.build_checkers(root))


@pytest.mark.parametrize("kind", ["minicheck-t5", "minicheck-roberta", "minicheck-deberta", "factcg", "alignscore", "hhem"])
def test_each_checker_scores_the_demo_and_measures_itself(checkers, kind, dataset, tmp_path):
    spec = checkers[kind]
    answers = tmp_path / "a.jsonl"
    answers.write_text("".join(json.dumps(a) + "\n" for a in ANSWERS))
    args = ["evaluate", "--dataset", str(dataset), "--answers", str(answers), "--nli", spec, "--metrics", "alignment,na", "-o", str(tmp_path / "e")]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "e" / "summary.json").read_text())
    named = summary["models"]["alignment"]
    assert named.startswith(spec) and "format:" in named and "supported above 0.5" in named and "the premise (sentence) is the document" in named
    assert summary["provenance"]["model_runtimes"][spec]["device"] == "CPU"
    nli = summary["judges"]["nli"]  # the judge told apart beyond its spec: the local folder's weights, by content
    assert nli["weights"].startswith("folder digest ") and nli["device"] == "CPU" and nli["dtype"] and nli["threshold"] == 0.5
    rows = [json.loads(line) for line in (tmp_path / "e" / "scores.jsonl").read_text().splitlines()[1:]]
    judged = [c["entailment"] for r in rows for s in r["verdicts"] for c in s.get("citations", [])]
    assert len(judged) == 3 and all(0.0 <= p <= 1.0 for p in judged)  # every citation judged by the checker
    res = CliRunner().invoke(main, ["judge", "evaluate", "--nli", spec, "--resamples", "200", "-o", str(tmp_path / "j")])
    assert res.exit_code == 0, res.output
    (judged,) = json.loads((tmp_path / "j" / "judge.json").read_text())["judges"]
    assert judged["pairs"] == 77 and judged["inputs"] == {"chunked": 0, "cut": 0, "split_sentences": 0} and "format:" in judged["judge"]
    assert judged["balanced_accuracy"]["overall"]["point"] is not None


def test_a_served_judge_scores_the_demo(dataset, tmp_path):
    """`served-judge:` against a real local HTTP server answering as an OpenAI-compatible one."""
    import math

    from tests.servers import reply, scripted_server

    body = {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Yes"},
                "finish_reason": "length",
                "logprobs": {
                    "content": [
                        {"token": "Yes", "logprob": math.log(0.8), "bytes": None, "top_logprobs": [{"token": "Yes", "logprob": math.log(0.8), "bytes": None}]}
                    ]
                },
            }
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 1},
    }
    answers = tmp_path / "a.jsonl"
    answers.write_text("".join(json.dumps(a) + "\n" for a in ANSWERS))
    card = [{"id": "bespoke", "object": "model", "created": 0, "root": "/srv/bespoke"}]
    with scripted_server([reply(200, json.dumps(body).encode(), {"Content-Type": "application/json"})], models=card) as (url, log):
        spec = f"served-judge:{url}/v1:bespoke"
        res = CliRunner().invoke(
            main, ["evaluate", "--dataset", str(dataset), "--answers", str(answers), "--nli", spec, "--metrics", "alignment", "-o", str(tmp_path / "e")]
        )
        assert res.exit_code == 0, res.output
        assert log and json.loads(log[0]["body"])["messages"][1]["content"].startswith("Document: ")
    summary = json.loads((tmp_path / "e" / "summary.json").read_text())
    assert "MiniCheck LLM format" in summary["models"]["alignment"]
    assert Path(tmp_path / "e" / "summary.md").read_text()
