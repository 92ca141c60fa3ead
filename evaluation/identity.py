"""Which judge made a report's judge-dependent figures, told apart beyond its spec: two reports made
with other weights, another threshold, direction or dtype are never compared in silence
(`kalma compare` refuses such figures, naming what differs)."""

from __future__ import annotations

from typing import Any

# what makes two judges' verdicts differ; the device is recorded but not among them (the same
# weights on CPU and GPU round differently, which the cache keeps apart, but they are one judge)
DECISIVE = ("spec", "weights", "threshold", "direction", "dtype")


def entailment_identity(spec: str, threshold: float) -> dict[str, Any]:
    """The entailment judge as it ran in this process: spec, weights, format and direction, threshold,
    dtype and device."""
    from kalma.models import ENTAILMENT, describe, get_entailment, runtimes

    ent = get_entailment(spec)
    ran = runtimes().get(spec, {})
    weights = getattr(ent, "weights", None)
    found = weights() if callable(weights) else None
    if found is None:
        digest = getattr(ent, "digest", None)  # a `table:` file, by its bytes
        found = f"table sha256 {digest}" if digest else "none: rule-based" if ent.approximate else "not recorded (a served model: its server's)"
    return {
        "spec": spec,
        "described": describe(spec, ENTAILMENT),
        "weights": found,
        "threshold": threshold,
        "direction": "the cited triple is the document" if "document=hypothesis" in spec else "the sentence is the document",
        "dtype": str(ran.get("dtype", "")),
        "device": str(ran.get("device", "")),
    }


def llm_identity(spec: str) -> dict[str, Any]:
    """G-Eval's judge as it ran: spec, weights where local, dtype and device."""
    from kalma.models import LLMS, describe, get_llm, runtimes

    llm = get_llm(spec)
    ran = runtimes().get(spec, {})
    weights = getattr(llm, "weights", None)
    found = weights() if callable(weights) else None
    return {
        "spec": spec,
        "described": describe(spec, LLMS),
        "weights": found or "not recorded (a served model: its server's)",
        "threshold": None,
        "direction": None,
        "dtype": str(ran.get("dtype", "")),
        "device": str(ran.get("device", "")),
    }


def differs(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The decisive fields in which two judges' identities differ, each as `field a != b`."""
    return [f"{k} {a.get(k)!r} != {b.get(k)!r}" for k in DECISIVE if a.get(k) != b.get(k)]


def lines(judges: dict[str, dict[str, Any]]) -> list[str]:
    """Each judge of a report in one line (summary.md)."""
    out = []
    for role, j in judges.items():
        said = [f"weights: {j['weights']}"] + ([f"threshold {j['threshold']:g}", j["direction"]] if j.get("threshold") is not None else [])
        out.append(f"- {role}: {j['spec']}; " + "; ".join([*said, f"dtype {j['dtype'] or 'n/a'} on {j['device'] or 'n/a'}"]))
    return out


def identities(needs: set[str], nli: str, threshold: float, judge: str | None) -> dict[str, dict[str, Any]]:
    """The identity of every judge a run's metrics used, by role (`nli`, `judge`)."""
    out = {"nli": entailment_identity(nli, threshold)} if "nli" in needs else {}
    return out | ({"judge": llm_identity(judge)} if "judge" in needs and judge else {})
