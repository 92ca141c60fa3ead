"""`kalma build`: relation records → a BioKaLMA-style dataset, resumable and seeded.

Entry ids come from the records' file and line, and every entry's seed is derived from the
run seed and its id, so a killed run resumes with no entry lost, doubled or shifted, and the
resumed file equals an uninterrupted one.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tqdm import tqdm

from kalma.kg import open_source
from kalma.models import get_llm, get_scorer
from kalma.provenance import provenance
from kalma.resume import ResumableOutput, fingerprint
from kalma.schema import DatasetEntry, KnowledgeGraph

from .disambiguate import disambiguate, load_relation_table
from .evolve import EvolveConfig, evolve
from .records import read_records
from .selection import relation_counts


@dataclass
class BuildConfig:
    kg: str = "demo"
    llm: str = "template"
    lm: str = "smollm2"
    seed: int = 0
    evolve: EvolveConfig = field(default_factory=EvolveConfig)
    relation_table: str | None = None
    columns: dict[str, str] = field(default_factory=dict)


def entry_seed(seed: int, entry_id: str) -> int:
    return int(hashlib.sha256(f"{seed}:{entry_id}".encode()).hexdigest()[:8], 16)


def build(
    records: str | Path, out: str | Path, cfg: BuildConfig, progress: bool = True, stop_after: int | None = None, overwrite: bool = False
) -> dict[str, object]:
    table = load_relation_table(cfg.relation_table)
    selection = read_records(records, cfg.columns, set(table))
    source = open_source(cfg.kg)
    resolutions, status = disambiguate(selection.records, source, table)
    resolved = [r for r in resolutions if r.status == "resolved"]
    graphs = source.subgraphs(sorted({q for r in resolved for q in (r.qid_a, r.qid_b)}))  # type: ignore[misc]
    pools = [KnowledgeGraph(entities=[graphs[r.qid_a], graphs[r.qid_b]]) for r in resolved]  # type: ignore[index]
    counts, n = relation_counts(pools)
    llm, scorer = get_llm(cfg.llm), get_scorer(cfg.lm)
    config = {"records": str(records), **{k: v for k, v in asdict(cfg).items()}, "llm_note": llm.label_note}
    run = fingerprint({"records": records, "relation_table": cfg.relation_table}, {**config, "llm_identity": llm.spec, "lm_identity": scorer.spec})
    stem = Path(records).stem
    with ResumableOutput(out, "dataset", DatasetEntry, lambda e: e.id, run, provenance(config=config), overwrite=overwrite) as output:
        done = set(output.done)
        todo = [(r, p) for r, p in zip(resolved, pools) if f"{stem}-{r.record.source_line}" not in done]
        if stop_after is not None:
            todo = todo[:stop_after]
        for r, pool in tqdm(todo, desc=f"build ({cfg.llm})", unit="entry", disable=not progress):
            eid = f"{stem}-{r.record.source_line}"
            output.write(evolve(eid, r.record, (r.qid_a, r.qid_b), pool, llm, scorer, counts, n, cfg.evolve, entry_seed(cfg.seed, eid)))  # type: ignore[arg-type]
    return {
        "selection": selection.report(),
        "disambiguation": dict(status),
        "unresolved": [
            {
                "line": x.record.source_line,
                "pair": [x.record.person_a, x.record.relation, x.record.person_b],
                "status": x.status,
                "candidates": [list(x.candidates_a), list(x.candidates_b)],
            }
            for x in resolutions
            if x.status != "resolved"
        ],
        "built": len(todo),
        "already_there": len(done),
    }
