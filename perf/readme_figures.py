"""The figures the README states, regenerated: each benchmark run several times, each run in a
fresh process, every number reported as its median and range (min to max), with the date and
machine.

    python -m perf.readme_figures            # every benchmark, 3 runs of each
    python -m perf.readme_figures --runs 5 kg_bench eval_bench

A shared machine is noisy: a single run proves nothing, and a claim stands only where every run
agrees (the range, not the median, says whether it does). Writes perf/results/readme_figures.md,
one section per benchmark: a run of some benchmarks replaces their sections and keeps the others.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from datetime import UTC, datetime

from .common import RESULTS, ROOT

# benchmark: (module arguments, the name its report is filed under)
BENCHMARKS: dict[str, tuple[list[str], str]] = {
    "kg_bench": ([], "kg_bench"),
    "eval_bench": ([], "eval_bench"),
    "hardware_bench": (["--shapes", "small"], "hardware_bench_small"),
    "hardware_bench_smollm2": (["--smollm2"], "hardware_bench_smollm2"),
    "metric_cost": ([], "metric_cost"),
    "builder_bench": ([], "builder_bench"),
    "build_scale": ([], "build_scale"),
    "demo_bench": ([], "demo_bench"),
    "parse_bench": ([], "parse_bench"),
    "cpu_policy": ([], "cpu_policy"),
}


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), platform.processor())
    return f"{os.cpu_count()} cores ({cpu}), {platform.machine()}, Python {platform.python_version()}"


def run(name: str, runs: int) -> list[dict[str, object]]:
    args, filed = BENCHMARKS[name]
    module = "hardware_bench" if name.startswith("hardware_bench") else name
    out = []
    for i in range(runs):
        print(f"{name}: run {i + 1} of {runs}", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", f"perf.{module}", *args], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        out.append(json.loads((RESULTS / f"{filed}.json").read_text()))
    return out


def cell(text: object) -> str:
    """A Markdown table cell: a `|` in a figure's name would end it."""
    return str(text).replace("|", "\\|")


def table(name: str, reports: list[dict[str, object]]) -> list[str]:
    when = f"{datetime.now(UTC):%Y-%m-%d}, {machine()}"
    lines = [f"{SECTION}{name} ({len(reports)} run{'s' if len(reports) != 1 else ''}, {when})", "", "| figure | median | range |", "|---|---|---|"]
    for key in reports[0]:
        values = [r.get(key) for r in reports]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            nums = [float(v) for v in values]  # type: ignore[arg-type]
            lines.append(f"| {cell(key)} | {statistics.median(nums):.4g} | {min(nums):.4g} to {max(nums):.4g} |")
        else:
            lines.append(f"| {cell(key)} | {cell(values[0])} | {'same in every run' if len({str(v) for v in values}) == 1 else 'varies'} |")
    return lines + [""]


SECTION = "### "


def merged(previous: str, fresh: dict[str, list[str]]) -> str:
    """The results file with the sections of `fresh` replaced (or added), the others kept, in
    the order of BENCHMARKS."""
    sections: dict[str, str] = {}
    for chunk in previous.split("\n" + SECTION)[1:] if previous.startswith("Figures") else []:
        sections[chunk.split(" ", 1)[0]] = SECTION + chunk.rstrip("\n") + "\n"
    sections |= {name: "\n".join(lines) for name, lines in fresh.items()}
    head = "Figures of `python -m perf.readme_figures`: each section's runs are fresh processes; its heading gives its date and machine.\n"
    return head + "".join("\n" + sections[n] for n in BENCHMARKS if n in sections)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    ap.add_argument("--runs", type=int, default=3, help="runs of each benchmark, each in a fresh process (default 3)")
    ap.add_argument("names", nargs="*", metavar="NAME", help=f"some of: {', '.join(BENCHMARKS)} (default: all; the others' sections are kept)")
    a = ap.parse_args()
    unknown = [n for n in a.names if n not in BENCHMARKS]
    if unknown:
        ap.error(f"unknown benchmark {unknown[0]!r}; known: {', '.join(BENCHMARKS)}")
    fresh = {name: table(name, run(name, a.runs)) for name in (a.names or list(BENCHMARKS))}
    RESULTS.mkdir(parents=True, exist_ok=True)
    target = RESULTS / "readme_figures.md"
    text = merged(target.read_text() if target.exists() else "", fresh)
    target.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
