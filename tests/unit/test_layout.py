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
