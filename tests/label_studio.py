"""A real Label Studio, as a team runs it, for the tests of `kalma human import` against the files
its server writes.

Label Studio pins its own Django stack, so it lives in a venv of its own (`make label-studio`:
`.lsvenv/`, about 1 GB, 2 min 16 s on this project's 2-core machine); the tests find it there, at
$KALMA_LABEL_STUDIO, or on PATH, and skip in one line without it. Its first start migrates its
database (about 50 s here).

`python -m tests.label_studio` starts one on 127.0.0.1, has two annotators label the demo's
exported tasks through its REST API exactly as the web UI posts them, and writes every export
format into tests/fixtures/label_studio/ (the fixtures the tests read on every machine):

- the export the web UI and the SDK's `download_sync` use (`GET /api/projects/{id}/export`), as
  JSON, JSON_MIN, CSV and TSV: annotators by user id;
- the snapshot export API with `annotations__completed_by: {only_id: false}`, as JSON, JSON_MIN
  and CSV: annotators by e-mail;
- a second alignment project labelled by user 1 alone, standing for a second server whose first
  user is someone else;
- one dataset question where an annotator ticks no knowledge line (a multi-choice left empty
  writes no result at all) and one where she ticks "none".
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from tests.servers import free_port

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "label_studio"
ADMIN, SECOND = ("a@example.org", "secret123"), ("b@example.org", "secret456")
ADMIN_TOKEN = "0123456789abcdef0123456789abcdef01234567"


def executable() -> str | None:
    for found in (os.environ.get("KALMA_LABEL_STUDIO"), str(ROOT / ".lsvenv" / "bin" / "label-studio"), shutil.which("label-studio")):
        if found and Path(found).is_file():
            return found
    return None


def missing() -> str | None:
    """Why no Label Studio can run here, or None."""
    return None if executable() else "Label Studio is not installed (`make label-studio` puts it in .lsvenv, or set KALMA_LABEL_STUDIO)"


@dataclass
class Client:
    base: str
    token: str = ADMIN_TOKEN

    def call(self, method: str, path: str, token: str | None = None, **kw: Any) -> requests.Response:
        r = requests.request(method, self.base + path, headers={"Authorization": f"Token {token or self.token}"}, timeout=60, **kw)
        r.raise_for_status()
        return r

    def signup(self, email: str, password: str) -> str:
        """A second annotator, signed up through the web form as a person would; returns her API token."""
        s = requests.Session()
        s.get(f"{self.base}/user/signup/", timeout=60)
        form = {"email": email, "password": password, "csrfmiddlewaretoken": s.cookies.get("csrftoken", ""), "how_find_us": "", "allow_newsletters": "false"}
        s.post(f"{self.base}/user/signup/", data=form, headers={"Referer": f"{self.base}/user/signup/"}, timeout=60).raise_for_status()
        return str(s.get(f"{self.base}/api/current-user/token", timeout=60).json()["token"])

    def project(self, title: str, config: str, tasks: list[dict[str, Any]]) -> tuple[int, list[int]]:
        self.call("POST", "/api/projects/validate/", json={"label_config": config})
        pid = int(self.call("POST", "/api/projects/", json={"title": title, "label_config": config}).json()["id"])
        self.call("POST", f"/api/projects/{pid}/import", json=tasks)
        found = self.call("GET", f"/api/tasks/?project={pid}&page_size=1000").json()
        return pid, sorted(t["id"] for t in (found["tasks"] if isinstance(found, dict) else found))

    def annotate(self, task: int, result: list[dict[str, Any]], token: str) -> None:
        self.call("POST", f"/api/tasks/{task}/annotations/", token=token, json={"result": result})

    def export(self, pid: int, kind: str) -> bytes:
        return self.call("GET", f"/api/projects/{pid}/export?exportType={kind}").content

    def snapshot(self, pid: int, kinds: tuple[str, ...]) -> dict[str, bytes]:
        """The snapshot export API, annotators with their e-mails."""
        body = {"title": "with e-mails", "serialization_options": {"annotations__completed_by": {"only_id": False}}}
        eid = self.call("POST", f"/api/projects/{pid}/exports/", json=body).json()["id"]
        for _ in range(120):
            if self.call("GET", f"/api/projects/{pid}/exports/{eid}").json().get("status") == "completed":
                break
            time.sleep(0.5)
        return {k: self.call("GET", f"/api/projects/{pid}/exports/{eid}/download?exportType={k}").content for k in kinds}


@contextmanager
def server(workdir: Path) -> Iterator[Client]:
    """A Label Studio listening on 127.0.0.1 only, with its data under `workdir`."""
    exe = executable()
    if exe is None:
        raise RuntimeError(missing())
    port = free_port()
    data = workdir / "label-studio-data"
    env = {**os.environ, "LABEL_STUDIO_BASE_DATA_DIR": str(data), "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true"}
    args = [exe, "start", "--no-browser", "--internal-host", "127.0.0.1", "--port", str(port), "--data-dir", str(data)]
    args += ["--username", ADMIN[0], "--password", ADMIN[1], "--user-token", ADMIN_TOKEN, "--enable-legacy-api-token"]
    with (workdir / "label-studio.log").open("wb") as log:
        proc = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(600):
                try:
                    if requests.get(f"{base}/health", timeout=2).status_code == 200:
                        break
                except requests.ConnectionError:
                    pass
                if proc.poll() is not None:
                    raise RuntimeError(f"Label Studio exited ({proc.returncode}); see {workdir / 'label-studio.log'}")
                time.sleep(0.5)
            else:
                raise RuntimeError(f"Label Studio did not answer on {base} within 5 minutes")
            yield Client(base)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def _choice(name: str, to: str, values: list[str]) -> dict[str, Any]:
    return {"from_name": name, "to_name": to, "type": "choices", "value": {"choices": values}}


def _rating(name: str, value: int) -> dict[str, Any]:
    return {"from_name": name, "to_name": "question", "type": "rating", "value": {"rating": value}}


def samples(workdir: Path) -> tuple[Path, Path]:
    """The demo's alignment and dataset samples, as `kalma human sample` draws them."""
    from click.testing import CliRunner

    from kalma.cli import main

    def ok(args: list[str]) -> None:
        res = CliRunner().invoke(main, args)
        if res.exit_code != 0:
            raise RuntimeError(res.output)

    ok(["dataset", "demo", "-o", str(workdir / "dataset.jsonl")])
    ok(["answer", "--dataset", str(workdir / "dataset.jsonl"), "--retrieval", "gold", "--temperatures", "0", "-o", str(workdir / "answers.jsonl")])
    align, dset = workdir / "align.sample.jsonl", workdir / "dset.sample.jsonl"
    ok(["human", "sample", "--dataset", str(workdir / "dataset.jsonl"), "--answers", str(workdir / "answers.jsonl"), "-n", "6", "-o", str(align)])
    ok(["human", "sample", "--dataset", str(workdir / "dataset.jsonl"), "-n", "3", "-o", str(dset)])
    for s in (align, dset):
        ok(["human", "export", str(s), "-o", str(workdir / s.name.split(".")[0])])
    return align, dset


# Who says what: alignment units by index (1 supported, 0 not); dataset units by index:
# (necessary lines, authenticity, naturalness, significance), None for no `necessary` result.
ALIGN_A = [1, 1, 0, 1, 1, 0]
ALIGN_B = [1, 0, 0, 1, 1, 1]
ALIGN_SECOND_SERVER = [0, 1, 0, 1, 0, 1]
DSET_A: list[tuple[list[str] | None, str, int, int]] = [
    (["1", "3"], "1", 4, 3),
    (["2"], "1", 5, 4),
    (["none"], "1", 3, 2),
    (["1", "2"], "0", 4, 4),
    (["1"], "1", 5, 5),
    (["3"], "1", 2, 3),
]
DSET_B: list[tuple[list[str] | None, str, int, int]] = [
    (["1"], "1", 4, 4),
    (None, "1", 4, 3),
    (["2", "3"], "1", 3, 3),
    (["1", "2"], "1", 5, 4),
    (["none"], "0", 4, 5),
    (["3"], "1", 3, 3),
]


def capture(client: Client, workdir: Path, out: Path) -> None:
    """Two annotators label both samples in a real server; every export format lands in `out`."""
    align, dset = samples(workdir)
    second = client.signup(*SECOND)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(align, out / align.name)
    shutil.copyfile(dset, out / dset.name)
    for task, sample, per_a, per_b in (("align", align, ALIGN_A, ALIGN_B), ("dset", dset, DSET_A, DSET_B)):
        folder = workdir / sample.name.split(".")[0]
        config = (folder / "label-studio-config.xml").read_text()
        tasks = json.loads((folder / "label-studio-tasks.json").read_text())
        pid, ids = client.project(task, config, tasks)
        for who, labels in ((client.token, per_a), (second, per_b)):
            for tid, lab in zip(ids, labels):
                client.annotate(tid, _result(task, lab), who)
        for kind, ext in (("JSON", "json"), ("JSON_MIN", "min.json"), ("CSV", "csv"), ("TSV", "tsv")):
            (out / f"{task}.{ext}").write_bytes(client.export(pid, kind))
        for kind, data in client.snapshot(pid, ("JSON", "JSON_MIN", "CSV")).items():
            ext = {"JSON": "json", "JSON_MIN": "min.json", "CSV": "csv"}[kind]
            (out / f"{task}.emails.{ext}").write_bytes(data)
    config = (workdir / "align" / "label-studio-config.xml").read_text()
    pid, ids = client.project("align, second server", config, json.loads((workdir / "align" / "label-studio-tasks.json").read_text()))
    for tid, lab in zip(ids, ALIGN_SECOND_SERVER):
        client.annotate(tid, _result("align", lab), client.token)
    (out / "align.second-server.json").write_bytes(client.export(pid, "JSON"))


def _result(task: str, label: Any) -> list[dict[str, Any]]:
    """A result list as the web UI posts it: a Choices value is its alias; an empty multi-choice is no entry at all."""
    if task == "align":
        return [_choice("supported", "sentence", [str(label)])]
    necessary, authentic, natural, significant = label
    out = [_choice("necessary", "question", necessary)] if necessary is not None else []
    return out + [_choice("authenticity", "question", [authentic]), _rating("naturalness", natural), _rating("significance", significant)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", type=Path, default=FIXTURES, help="where the exports go (default: tests/fixtures/label_studio)")
    args = ap.parse_args()
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kalma-label-studio-") as tmp, server(Path(tmp)) as client:
        capture(client, Path(tmp), args.output)
    print(f"wrote {', '.join(sorted(p.name for p in args.output.iterdir()))} to {args.output}")


if __name__ == "__main__":
    main()
