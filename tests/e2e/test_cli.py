"""The command line: help everywhere, version, did-you-mean, record checking."""

from __future__ import annotations

import subprocess
import sys

from click.testing import CliRunner

from kalma.cli import main


def test_help_version_and_suggestion():
    r = CliRunner()
    assert "Commands:" in r.invoke(main, ["--help"]).output
    assert "0.1.0" in r.invoke(main, ["--version"]).output
    res = r.invoke(main, ["cach"])
    assert res.exit_code != 0 and "Did you mean 'cache'" in res.output


def test_every_subcommand_has_help():
    r = CliRunner()
    for name in main.list_commands(None):  # type: ignore[arg-type]
        res = r.invoke(main, [name, "--help"])
        assert res.exit_code == 0, (name, res.output)


def test_help_does_not_import_heavy_libraries():
    code = (
        "import sys; from kalma.cli import main; main(['--help'], standalone_mode=False); "
        "print(sorted(m for m in ('torch','transformers','spacy','openai') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("[]")


def test_check_reports_bad_lines(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_text('{"entry_id": "e1", "text": "x", "model": "m"}\n{"entry_id": 3}\n')
    res = CliRunner().invoke(main, ["check", str(p), "--kind", "answers", "--all-errors"])
    assert res.exit_code == 1 and ":2: field" in res.output and "1 good record," in res.output


def test_cache_stats_and_clear(tmp_path, monkeypatch):
    from kalma import cache

    monkeypatch.setenv("KALMA_CACHE_DIR", str(tmp_path))
    cache.set_cache(cache.Cache("default"))
    cache.get_cache().put("k1", "llm", {"x": 1})
    cache.get_cache().put("k2", "kg", {"y": 2})
    r = CliRunner()
    out = r.invoke(main, ["cache", "stats"]).output
    assert '"llm": 1' in out and '"kg": 1' in out and str(tmp_path) in out
    assert "removed 1 entries" in r.invoke(main, ["cache", "clear", "--namespace", "kg"]).output
    assert cache.get_cache().stats()["entries"] == {"llm": 1}
