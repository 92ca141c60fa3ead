"""The layout of docs/architecture.md held by the imports: the suite's own benchmarks (`perf/`)
never import the tests, the package the users install imports neither, and the shared vocabulary
(`kalma/`) imports no stage (data flows one way)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("kalma", "dataset_builder", "baselines", "evaluation", "bench")


def _imported(path: Path) -> set[str]:
    """The top-level names of every module `path` imports, at any depth of its code."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


STAGES = {"dataset_builder", "baselines", "evaluation", "bench"}


@pytest.mark.parametrize("folder, forbidden", [("perf", {"tests"}), ("kalma", {"tests", "perf", *STAGES}), *((p, {"tests", "perf"}) for p in PACKAGES[1:])])
def test_no_module_imports_what_its_layer_must_not(folder, forbidden):
    wrong = {str(p.relative_to(ROOT)): sorted(_imported(p) & forbidden) for p in (ROOT / folder).rglob("*.py")}
    assert not {k: v for k, v in wrong.items() if v}


def test_the_check_sees_an_import_inside_a_function(tmp_path):
    (tmp_path / "m.py").write_text("def f():\n    from tests.unit import x\n")
    assert _imported(tmp_path / "m.py") == {"tests"}


def _raw_json_writes(path: Path) -> list[int]:
    """Lines of `path` that call json.dump(s) with neither allow_nan=False nor `.encode` (a digest)."""
    tree = ast.parse(path.read_text(), str(path))
    encoded = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "encode"}
    out = []
    for node in ast.walk(tree):
        f = node.func if isinstance(node, ast.Call) else None
        if isinstance(f, ast.Attribute) and f.attr in ("dump", "dumps") and isinstance(f.value, ast.Name) and f.value.id == "json":
            refuses = any(k.arg == "allow_nan" and isinstance(k.value, ast.Constant) and k.value.value is False for k in node.keywords)  # type: ignore[union-attr]
            if not refuses and id(node) not in encoded:
                out.append(node.lineno)
    return out


def test_no_package_writes_json_that_may_hold_nan():
    """JSON has no NaN, and most readers refuse a file with one: figures are written through
    `kalma.jsonl.dumps` (NaN as null); a raw json.dumps either refuses NaN or is hashed, never read."""
    wrong = {str(p.relative_to(ROOT)): lines for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py") if (lines := _raw_json_writes(p))}
    assert not wrong, f"write these through kalma.jsonl.dumps (NaN as null): {wrong}"


def test_the_json_check_sees_a_raw_write(tmp_path):
    (tmp_path / "m.py").write_text("import json\nx = json.dumps(1)\ny = hash(json.dumps(2).encode())\nz = json.dumps(3, allow_nan=False)\n")
    assert _raw_json_writes(tmp_path / "m.py") == [2]


def test_every_mutation_still_finds_the_code_it_breaks():
    """`make mutations` stops at a mutation whose text the code no longer holds: found here, in
    `make test`, when the code changes, not minutes into a mutation run."""
    from tests.mutations import areas

    stale = [f"{area}: {m.name} ({m.file})" for area, found in areas().items() for m in found if (ROOT / m.file).read_text().count(m.old) != 1]
    assert not stale, "update tests/mutations: " + "; ".join(stale)
