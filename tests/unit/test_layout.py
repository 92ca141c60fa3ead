"""The layout of docs/architecture.md held by the imports: the suite's own benchmarks (`perf/`)
never import the tests, the package the users install imports neither, and data flows one way:
`kalma` < `dataset_builder`, `baselines` < `evaluation` < `bench`, a stage importing only the
stages below it (at any depth of its code: an import inside a function is an import)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.terminal import sigint_default

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


# Each stage's rank: a module imports only packages of a lower rank (the builder and the baselines,
# side by side, not each other).
RANKS = {"kalma": 0, "dataset_builder": 1, "baselines": 1, "evaluation": 2, "bench": 3}


def climbs(folder: Path, package: str) -> dict[str, list[str]]:
    """Each module of `package` under `folder` that imports a stage at or above its own, with those stages."""
    above = {p for p, r in RANKS.items() if r >= RANKS[package] and p != package}
    found = {str(p.relative_to(folder)): sorted(_imported(p) & above) for p in (folder / package).rglob("*.py")}
    return {k: v for k, v in found.items() if v}


@pytest.mark.parametrize("package", list(RANKS))
def test_no_stage_imports_a_stage_above_it(package):
    assert not climbs(ROOT, package)


def test_the_climb_check_sees_a_lazy_import_and_a_sibling(tmp_path):
    (tmp_path / "evaluation").mkdir()
    (tmp_path / "evaluation" / "m.py").write_text("import kalma\n\ndef f():\n    from bench.sensitivity import run\n")
    (tmp_path / "baselines").mkdir()
    (tmp_path / "baselines" / "m.py").write_text("from dataset_builder import demo\nfrom kalma import schema\n")
    assert climbs(tmp_path, "evaluation") == {"evaluation/m.py": ["bench"]} and climbs(tmp_path, "baselines") == {"baselines/m.py": ["dataset_builder"]}


def _imports_within(path: Path, package: str) -> set[str]:
    """The modules of `package` that `path` (a module of it) imports, relative imports resolved."""
    here = path.relative_to(ROOT).with_suffix("").parts
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            base = ".".join(here[: len(here) - node.level] + ((node.module,) if node.module else ())) if node.level else node.module or ""
            out.update({base, *(f"{base}.{a.name}" for a in node.names)})
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m.startswith(package + ".") and (ROOT / (m.replace(".", "/") + ".py")).exists()}


def test_the_answers_reader_asks_each_format_and_no_format_imports_it_back():
    """`kalma.answers_file` is the one reader of answers files; the format modules it asks
    (`kalma.inspect_log`, and what they share, `kalma.foreign`) never reach it again."""
    reader = "kalma.answers_file"
    seen, todo = set(), sorted(_imports_within(ROOT / "kalma/answers_file.py", "kalma"))
    assert {"kalma.inspect_log", "kalma.foreign"} <= set(todo)
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += _imports_within(ROOT / (m.replace(".", "/") + ".py"), "kalma")
    assert reader not in seen


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


def test_the_docs_count_each_areas_mutations_as_they_are():
    """docs/tests.md's table gives each area's number of mutations: the numbers a reader trusts."""
    import re

    from tests.mutations import areas

    table = dict(re.findall(r"^\| `(\w+)` \| (\d+) \|", (ROOT / "docs" / "tests.md").read_text(), re.M))
    assert {area: int(n) for area, n in table.items()} == {area: len(found) for area, found in areas().items()}


def test_every_module_of_the_packages_imports():
    """Each module imports (`make test` collects doctests only from modules that have some: the
    root conftest.py); with every extra installed, as `make install` installs them."""
    import importlib

    modules = sorted(p.relative_to(ROOT).with_suffix("") for package in PACKAGES for p in (ROOT / package).rglob("*.py"))
    failed = {}
    for module in modules:
        name = ".".join(module.parts).removesuffix(".__init__")
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - every failure named at once
            failed[name] = f"{type(exc).__name__}: {exc}"
    assert not failed, failed


def test_doctests_are_collected_from_each_module_that_has_some():
    """The root conftest.py skips, for doctests, only modules whose text has no ">>>"."""
    from conftest import pytest_ignore_collect

    with_doctests, without = ROOT / "kalma" / "citations.py", ROOT / "kalma" / "inspect_model.py"
    assert ">>>" in with_doctests.read_text() and ">>>" not in without.read_text()
    assert pytest_ignore_collect(with_doctests, None) is None  # type: ignore[arg-type]
    assert pytest_ignore_collect(without, None) is True  # type: ignore[arg-type]
    assert pytest_ignore_collect(ROOT / "tests" / "unit" / "test_layout.py", None) is None  # type: ignore[arg-type]


def _modules_imported(path: Path) -> set[str]:
    """The full dotted name of every module `path` imports, and of every name it imports from one."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def _matches(module: str, patterns: list[str]) -> bool:
    """As mypy reads a module pattern: `a.b.*` is `a.b` and every module under it."""
    return any(module == p.removesuffix(".*") or (p.endswith(".*") and module.startswith(p[:-1])) for p in patterns)


def test_mypy_skips_no_module_this_code_imports():
    """pyproject.toml's `follow_imports = "skip"` lists modules this code never imports (their
    types would silently become Any): each import of the checked packages is outside them, or
    taken back by a `follow_imports = "normal"` entry."""
    import tomllib

    overrides = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"]
    listed = {how: [m for o in overrides if o.get("follow_imports") == how for m in o["module"]] for how in ("skip", "normal")}
    assert "textual.*" in listed["skip"] and "transformers.models.llama.*" in listed["normal"]
    checked = {p for folder in (*PACKAGES, "perf") for p in (ROOT / folder).rglob("*.py")}
    unseen = {str(p.relative_to(ROOT)): sorted(m for m in _modules_imported(p) if _matches(m, listed["skip"])) for p in checked}
    skipped = {k: [m for m in v if not _matches(m, listed["normal"])] for k, v in unseen.items()}
    assert not {k: v for k, v in skipped.items() if v}


def test_the_longest_modules_run_first_whole_in_the_order_named():
    """`LONGEST_FIRST` (tests/conftest.py) names test files (a renamed one would silently drop back
    into the collection's order); their tests lead, module by module in the order named, and the
    rest keep theirs."""
    from types import SimpleNamespace

    from tests.conftest import LONGEST_FIRST, pytest_collection_modifyitems

    assert all((ROOT / name).is_file() for name in LONGEST_FIRST), [n for n in LONGEST_FIRST if not (ROOT / n).is_file()]
    first, second = LONGEST_FIRST[:2]
    names = ["tests/unit/test_b.py", second, "tests/unit/test_a.py", first, second]
    items = [SimpleNamespace(nodeid=f"{name}::t{i}") for i, name in enumerate(names)]
    pytest_collection_modifyitems(items)
    assert [x.nodeid for x in items] == [f"{first}::t3", f"{second}::t1", f"{second}::t4", "tests/unit/test_b.py::t0", "tests/unit/test_a.py::t2"]


def test_a_worker_leaves_at_once_and_its_results_still_count(tmp_path):
    """A pytest-xdist worker ends with `os._exit` (tests/conftest.py): its interpreter never runs
    its exit handlers, and the run still reports each result and fails on a failure, even where
    the controller inherited a worker's PYTEST_XDIST_WORKER."""
    import os
    import subprocess
    import sys

    (tmp_path / "test_two.py").write_text(
        f"import atexit, pathlib\natexit.register(pathlib.Path({str(tmp_path / 'finalized')!r}).touch)\n\n"
        "def test_passes():\n    pass\n\n\ndef test_fails():\n    assert False, 'on purpose'\n"
    )
    args = ["-n", "1", "-p", "tests.conftest", "-p", "no:cacheprovider", "-q", "--rootdir", str(tmp_path), str(tmp_path / "test_two.py")]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_XDIST_WORKER": "gw9"}  # as a pytest started by a worker inherits
    done = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=ROOT, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 1 and "1 failed, 1 passed" in done.stdout and "on purpose" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    assert not (tmp_path / "finalized").exists()


def _running(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.mark.parametrize("signum", [2, 15], ids=["ctrl-c", "sigterm"])
def test_a_stopped_mutation_run_puts_the_file_back_and_ends_its_tests(tmp_path, signum):
    """`timeout make mutations`, a CI job's limit or Ctrl-C: the file being mutated is restored,
    the tests running against it end with the run (workers too), and the run says how far it got."""
    import signal
    import subprocess
    import sys
    import time

    code, pid = tmp_path / "code.py", tmp_path / "worker.pid"
    code.write_text("ANSWER = 42\n")
    (tmp_path / "test_slow.py").write_text(f"import os, time\n\n\ndef test_slow():\n    open({str(pid)!r}, 'w').write(str(os.getpid()))\n    time.sleep(60)\n")
    run = (
        "import tests.mutations as t\n"
        f"t.areas = lambda: {{'x': (t.Mutation('the answer', {str(code)!r}, '42', '41', ({str(tmp_path / 'test_slow.py')!r},)),)}}\n"
        "t.main([])\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", run], cwd=ROOT, stderr=subprocess.PIPE, text=True, preexec_fn=sigint_default)
    deadline = time.monotonic() + 60
    while not (pid.exists() and pid.read_text()) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert code.read_text() == "ANSWER = 41\n"  # mutated, its test running in a worker
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=30)
    how = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM"}[signal.Signals(signum)]
    assert proc.returncode == 128 + signum and err.splitlines()[-1] == f"stopped by {how} after 0 of 1 mutations; the file being mutated is restored", err
    assert code.read_text() == "ANSWER = 42\n"
    worker, deadline = int(pid.read_text()), time.monotonic() + 10
    while _running(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(worker)
