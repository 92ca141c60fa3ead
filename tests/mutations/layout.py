"""The one-way layout (docs/architecture.md): no stage imports a stage above it, and the one
reader of answers files is never imported back by the format modules it asks; every module
imports, and doctests are collected from each module that has some (the root conftest.py); the
longest test modules run first and a test worker leaves at once (tests/conftest.py)."""

from __future__ import annotations

from . import Mutation

LAYOUT = ("tests/unit/test_layout.py",)

MUTATIONS = (
    Mutation(
        "the judge pairs draw their removal from the bench again (evaluation climbing into bench)",
        "evaluation/judge_pairs.py",
        "    from kalma.removal import remove_knowledge\n",
        "    from bench.experiments import remove_knowledge\n",
        LAYOUT,
    ),
    Mutation(
        "the Inspect log reader imports the answers reader back (the circle)",
        "kalma/inspect_log.py",
        '    """The answers of an Inspect log of a KaLMA task, or None when `path` is no Inspect log."""\n',
        '    """The answers of an Inspect log of a KaLMA task, or None when `path` is no Inspect log."""\n'
        "    from .answers_file import ForeignFile  # noqa: F811\n",
        LAYOUT,
    ),
    Mutation(
        "a module without doctests that no longer imports (doctest collection no longer imports it)",
        "kalma/inspect_model.py",
        'PROVIDER = "kalma"\n',
        "PROVIDER = PROVIDER_NAME\n",
        LAYOUT,
    ),
    Mutation(
        "doctests collected only from modules without any",
        "conftest.py",
        '">>>" not in collection_path.read_text',
        '">>>" in collection_path.read_text',
        LAYOUT,
    ),
    Mutation(
        "mypy told to skip a package this code imports (its types silently Any)",
        "pyproject.toml",
        '"torch._subclasses.*",',
        '"torch._subclasses.*", "polars.*",',
        LAYOUT,
    ),
    Mutation(
        "a test worker ends through the interpreter's own exit again",
        "tests/conftest.py",
        "        os._exit(0)\n",
        "        return\n",
        LAYOUT,
    ),
    Mutation(
        "a worker known by its environment, so a pytest a test starts ends with status 0 whatever failed",
        "tests/conftest.py",
        '    if hasattr(config, "workerinput"):\n',
        '    if os.environ.get("PYTEST_XDIST_WORKER"):\n',
        LAYOUT,
    ),
    Mutation(
        "the longest modules no longer run first (the rank looked up by the whole test id)",
        "tests/conftest.py",
        'rank.get(item.nodeid.partition("::")[0], len(rank))',
        "rank.get(item.nodeid, len(rank))",
        LAYOUT,
    ),
    Mutation(
        "a module named to run first that does not exist",
        "tests/conftest.py",
        '    "tests/unit/test_gpu.py",\n)',
        '    "tests/unit/test_gpus.py",\n)',
        LAYOUT,
    ),
    Mutation(
        "a mutation run stopped by SIGTERM (`timeout`, a CI limit) leaves the file mutated",
        "tests/mutations/__init__.py",
        "    signal.signal(signal.SIGTERM, on_sigterm)\n",
        "",
        LAYOUT,
    ),
    Mutation(
        "a stopped mutation run leaves its tests' workers running against the restored file",
        "tests/mutations/__init__.py",
        "                os.killpg(tests.pid, signal.SIGKILL)\n",
        "                tests.kill()\n",
        LAYOUT,
    ),
    Mutation(
        "a stopped mutation run exits 1, as if a mutation survived",
        "tests/mutations/__init__.py",
        "        sys.exit(128 + (terminated[0] if terminated else signal.SIGINT))\n",
        "        sys.exit(1)\n",
        LAYOUT,
    ),
    Mutation(
        "docs/tests.md counting an area's mutations wrong",
        "docs/tests.md",
        "| `phrasing` | 6 |",
        "| `phrasing` | 7 |",
        LAYOUT,
    ),
)
