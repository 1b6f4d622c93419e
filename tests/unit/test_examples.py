"""Every sample the docs show is a file under ``examples/``, included by its page with
``--8<--`` (pymdownx.snippets, ``check_paths``: a missing file fails ``mkdocs build
--strict``), and checked here as what it stands for takes it:

- a job (``jobs/``), a schedule (``schedules/``) or a target (``targets/``, each put in a
  job) is posted to the api function's handler on the fakes and must be created (201): the
  API's models and its checks beyond them (allowed targets, secrets and calendars named,
  upstreams, SSRF spellings) alike;
- a business calendar (``calendars/``) is put as ``PUT /calendars/{name}`` takes it;
- jobs as code (``apply/``) are applied by ``chronoq apply``, a job file for the command line
  (``cli/``) created by ``chronoq jobs create -f``, both on the same handler;
- Python code (``tasks/``, ``webhooks/``) passes ruff and mypy strict (``make lint`` runs them
  over ``examples/``), and does what its page says;
- an answer (``answers/``) is the very document chronoq answers or sends for it, made again
  here from its request or its record.

A file no rule covers fails, as does a file no page includes, a page showing a JSON, YAML or
Python sample inline, and a page including lines of a JSON file that are not a part of it.
The runs page's table names every field of a run's answer, and the jobs page's every field a
job takes, so that neither falls behind what the API returns or accepts.
``examples/getting-started/`` is the walk-through's, checked by its own test."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from chronoq import resources as r
from chronoq import tasks
from chronoq.domain import notifications
from chronoq.domain.silence import SilenceEvent
from chronoq.settings import ApiSettings

from tests.builders import job_spec
from tests.unit.api_on_fakes import ENVIRONMENT, Api, api_on_fakes
from tests.unit.cli_on_fakes import HandlerApi, chronoq

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DOCS = ROOT / "docs"
#: The walk-through's samples, and its page: checked by the walk-through's own test.
ELSEWHERE = ("getting-started",)
#: What every sample job of an owner may name, made before it is posted: the secrets and
#: calendars the pages name, and the upstreams of the pipelines page's after job.
SECRETS = ("crm-key", "crm-token", "hook-key")
UPSTREAMS = ("extract", "clean")
#: A job a schedule or a target sample is put in.
HOURLY = {"type": "cron", "expression": "0 * * * *"}
TARGET = {"type": "http", "url": "https://example.com/hook"}

#: ``--8<-- "examples/FILE"``, or ``"examples/FILE:FIRST:LAST"`` for some of its lines; in a
#: Python fence, the block form (``--8<--``, the file, ``--8<--``), which is no Python that
#: ``ruff format`` (it formats Python fences in Markdown) would rewrite.
INCLUDE = re.compile(r'^--8<-- "(?P<path>examples/[^":]+)(?::(?P<first>\d+):(?P<last>\d+))?"$')
BLOCK = "--8<--"
FENCE = re.compile(r"^```(json|yaml|python)\s*$")


def samples(under: str = "", suffixes: tuple[str, ...] = ()) -> list[Path]:
    """The example files (under ``under``, with one of ``suffixes``), the walk-through's
    left out."""
    found = sorted(p for p in (EXAMPLES / under).rglob("*") if p.is_file())
    return [
        p
        for p in found
        if p.relative_to(EXAMPLES).parts[0] not in ELSEWHERE
        and "__pycache__" not in p.parts
        and (not suffixes or p.suffix in suffixes)
    ]


def ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(EXAMPLES)) for p in paths]


def pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if p.stem not in ELSEWHERE)


def includes() -> list[tuple[Path, str, tuple[int, int] | None]]:
    """Every ``--8<-- "examples/…"`` of the pages: the page, the file, the lines it takes."""
    found: list[tuple[Path, str, tuple[int, int] | None]] = []
    for page in pages():
        in_block = False
        for line in page.read_text().splitlines():
            if line.strip() == BLOCK:
                in_block = not in_block
            elif in_block:
                found.append((page, line.strip(), None))
            elif match := INCLUDE.match(line.strip()):
                lines = (int(match["first"]), int(match["last"])) if match["first"] else None
                found.append((page, match["path"], lines))
    return found


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    """The handler as the AWS deployment has it by default, its guard against private
    addresses on (chronoq local turns it off), with every service target and image listed."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # (the handler builds its clients)
    guarded = {**ENVIRONMENT, r.ENV_BLOCK_PRIVATE_TARGETS: "true"}
    with api_on_fakes() as api:
        service = api.module.service
        service.jobs = replace(service.jobs, network=ApiSettings.from_env(guarded).network)
        yield api


def owner_of_everything(api: Api) -> None:
    """Alice, with what the sample jobs name: the secrets, the calendars, the upstreams."""
    for name in SECRETS:
        status, body, _ = api.call("PUT", f"/secrets/{name}", body={"value": f"{name}-value"})
        assert status in (200, 201), body
    for calendar in samples("calendars"):
        status, body, _ = api.call("PUT", f"/calendars/{calendar.stem}", body=load(calendar))
        assert status in (200, 201), body
    for name in UPSTREAMS:
        upstream = {"name": name, "schedule": HOURLY, "target": TARGET}
        status, body, _ = api.call("POST", "/jobs", body=upstream)
        assert status == 201, body


def load(path: Path) -> Any:
    return json.loads(path.read_text())


def created(api: Api, job: dict[str, Any]) -> dict[str, Any]:
    owner_of_everything(api)
    status, body, _ = api.call("POST", "/jobs", body=job)
    assert status == 201, body
    return dict(body)


# --- what each file is ------------------------------------------------------------------------


def a_job(api: Api, path: Path) -> None:
    job = load(path)
    shown = created(api, job)
    assert shown["name"] == job["name"]


def a_schedule(api: Api, path: Path) -> None:
    created(api, {"name": path.stem, "schedule": load(path), "target": TARGET})


def a_target(api: Api, path: Path) -> None:
    target = load(path)
    shown = created(api, {"name": path.stem, "schedule": HOURLY, "target": target})
    assert shown["target"]["type"] == target["type"]


def a_calendar(api: Api, path: Path) -> None:
    status, body, _ = api.call("PUT", f"/calendars/{path.stem}", body=load(path))
    assert status == 201, body


def applied(api: Api, path: Path) -> None:
    """Jobs as code: ``chronoq apply`` of the file's directory creates each of its jobs."""
    with cli_on(api):
        result = chronoq("apply", "-f", str(path.parent), "-o", "json")
    done = json.loads(result.stdout)
    assert done["failed"] == [], done
    assert {job["name"] for job in done["created"]} == names_in(path), done


def names_in(path: Path) -> set[str]:
    import yaml

    return {job["name"] for job in yaml.safe_load_all(path.read_text()) if job}


def created_from_file(api: Api, path: Path) -> None:
    """A job file for the command line: ``chronoq jobs create -f FILE``."""
    with cli_on(api):
        result = chronoq("jobs", "create", "-f", str(path), "-o", "json")
    assert json.loads(result.stdout)["name"] in names_in(path)


@contextmanager
def cli_on(api: Api) -> Iterator[HandlerApi]:
    """The command line's requests answered by ``api``'s handler."""
    served = HandlerApi(api)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("chronoq.cli.common.connect", lambda *_: served)
        yield served


def python_code(api: Api, path: Path) -> None:
    """Python: what its page says it does (ruff and mypy strict: ``make lint``)."""
    BEHAVIOUR[path.relative_to(EXAMPLES).as_posix()](path)


def an_answer(api: Api, path: Path) -> None:
    """An answer: made again from what makes it, it is the file."""
    assert path.name in ANSWERS, f"{path}: no rule says what makes this answer"
    assert ANSWERS[path.name](api) == load(path)


def a_run(api: Api, path: Path) -> None:
    """A run as ``GET /runs/{id}`` shows it: every field the API shows, as the API shows it
    (its computed fields too: ``starts_at``, ``lag_ms``, ``waiting_for``), and no other."""
    from chronoq.openapi import Run

    shown = load(path)
    assert api.module.view(Run.model_validate(shown)) == shown


def sam_environment(api: Api, path: Path) -> None:
    """``sam local``'s env.json: the api function's CDK logical id (``Api/Function``: its
    path, and the first 8 hex digits of its MD5, as the CDK makes ids) and its variables."""
    path_in_stack = ("Api", "Function", "Resource")
    digest = hashlib.md5("/".join(path_in_stack).encode()).hexdigest().upper()[:8]  # noqa: S324
    functions = load(path)
    assert list(functions) == [f"ApiFunction{digest}"]
    assert set(functions[f"ApiFunction{digest}"]) <= set(r.API_FUNCTION.env)


#: Each directory's rule (a file in no such directory is covered by no rule).
RULES: dict[str, tuple[tuple[str, ...], Callable[[Api, Path], None]]] = {
    "jobs": ((".json",), a_job),
    "schedules": ((".json",), a_schedule),
    "targets": ((".json",), a_target),
    "calendars": ((".json",), a_calendar),
    "apply": ((".yaml", ".yml", ".json"), applied),
    "cli": ((".yaml", ".yml", ".json"), created_from_file),
    "tasks": ((".py",), python_code),
    "webhooks": ((".py",), python_code),
    "answers/errors": ((".json",), an_answer),
    "answers/notifications": ((".json",), an_answer),
    "answers/runs": ((".json",), a_run),
    "local": ((".json",), sam_environment),
}


def rule_of(path: Path) -> tuple[str, tuple[tuple[str, ...], Callable[[Api, Path], None]]]:
    """The rule of a file: its directory's (``answers/``: its sub-directory's)."""
    parts = path.relative_to(EXAMPLES).parts
    for kind in ("/".join(parts[:2]), parts[0]):
        if kind in RULES and len(parts) > kind.count("/") + 1:
            return kind, RULES[kind]
    raise AssertionError(f"{path}: no rule checks examples/{parts[0]}/ (add one to RULES)")


@pytest.mark.parametrize("path", samples(), ids=ids(samples()))
def test_given_an_example_file_then_what_it_stands_for_takes_it(api: Api, path: Path) -> None:
    kind, (suffixes, check) = rule_of(path)
    assert path.suffix in suffixes, f"{path}: examples/{kind}/ holds {', '.join(suffixes)} only"
    check(api, path)


# --- Python -----------------------------------------------------------------------------------


def load_module(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def reports_task(path: Path) -> None:
    """``mytasks/reports.py``: registered as ``mytasks.reports:nightly``, it counts a team's
    rows (the output the runs page shows) and refuses, for good, args without a team."""
    load_module(path, "mytasks.reports")
    try:
        nightly = tasks.lookup("mytasks.reports:nightly")
        assert nightly is not None
        context = tasks.RunContext("job_1", "job_1_20261126T020000Z", 1, "2026-11-26T02:00:00Z")
        assert {"result": nightly({"team": "data"}, context)} == {"result": {"rows": 1234}}
        with pytest.raises(tasks.PermanentError, match=r"args\.team"):
            nightly({}, context)
    finally:
        sys.modules.pop("mytasks.reports", None)


def webhook_verifier(path: Path) -> None:
    """A receiver's ``verify``: it takes what chronoq signs, and refuses what it did not."""
    verify = load_module(path, "examples_verify").verify
    secret = "4f1c" * 8
    body = notifications.body({"type": "run.finished", "status": "FAILED"})
    now = int(datetime.now(UTC).timestamp())
    header = f"t={now},v1={notifications.sign(secret, now, body)}"
    assert verify(secret, header, body)
    assert notifications.verify(secret, header, body, now=now)
    assert not verify(secret, header, body + b" ")
    assert not verify("another" + secret, header, body)
    old = now - 301
    assert not verify(secret, f"t={old},v1={notifications.sign(secret, old, body)}", body)


BEHAVIOUR: dict[str, Callable[[Path], None]] = {
    "tasks/reports.py": reports_task,
    "webhooks/verify.py": webhook_verifier,
}


@pytest.mark.parametrize("path", samples(suffixes=(".py",)), ids=ids(samples(suffixes=(".py",))))
def test_given_python_code_then_ruff_and_mypy_strict_pass(path: Path) -> None:
    """(``make lint`` runs the same over examples/ with the rest of the code.)"""
    bin_dir = Path(sys.executable).parent
    for command in (
        [str(bin_dir / "ruff"), "check", "--no-cache", str(path)],
        [str(bin_dir / "ruff"), "format", "--check", "--no-cache", str(path)],
        [str(bin_dir / "mypy"), "--no-incremental", "--cache-dir", "/dev/null", str(path)],
    ):
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{' '.join(command[:2])}: {done.stdout}{done.stderr}"


# --- answers ----------------------------------------------------------------------------------


def never_fires(api: Api) -> Any:
    job = {"name": "leap", "schedule": {"type": "cron", "expression": "0 0 30 2 *"}}
    status, body, _ = api.call("POST", "/jobs", body={**job, "target": TARGET})
    assert status == 422
    return body


def lambda_not_allowed(api: Api) -> Any:
    """A deployment with the default settings: no Lambda function is a target."""
    target = {
        "type": "lambda",
        "function_arn": "arn:aws:lambda:eu-west-1:123456789012:function:reports",
    }
    job = {"name": "reports", "schedule": HOURLY, "target": target}
    unlisted = {k: v for k, v in ENVIRONMENT.items() if k != r.ENV_LAMBDA_TARGETS}
    service = api.module.service
    service.jobs = replace(service.jobs, targets=ApiSettings.from_env(unlisted).targets)
    status, body, _ = api.call("POST", "/jobs", body=job)
    assert status == 422
    return body


def run_finished(_: Api) -> Any:
    """The document of a run's end, as the notifier writes it from the run the page shows
    (``answers/runs/nightly-failed.json``: the same run, as ``GET /runs/{id}`` shows it)."""
    from chronoq.domain.runs import Run

    run = Run.model_validate(load(EXAMPLES / "answers" / "runs" / "nightly-failed.json"))
    return notifications.message(run, named("nightly"))


def silence(name: str) -> Callable[[Api], Any]:
    def made(_: Api) -> Any:
        shown = load(EXAMPLES / "answers" / "notifications" / name)
        event = SilenceEvent.model_validate(
            {
                **{k: shown.get(k) for k in ("job_id", "owner", "status", "run_id")},
                **{k: shown.get(k) for k in ("last_success_at", "silent_since", "recovered_at")},
                "within": shown["success_within_seconds"],
            }
        )
        return notifications.silence_message(event, named(shown["job_name"]))

    return made


def named(name: str) -> Any:
    from chronoq.domain.jobs import Job

    spec = job_spec(HOURLY, name=name).model_dump()
    at = datetime(2026, 11, 1, tzinfo=UTC)
    fields = {"id": "job_1", "owner": "alice", "state": "ACTIVE", "version": 1}
    return Job.model_validate({**spec, **fields, "created_at": at, "updated_at": at})


#: Each answer's file name, and what makes it.
ANSWERS: dict[str, Callable[[Api], Any]] = {
    "never-fires.json": never_fires,
    "lambda-not-allowed.json": lambda_not_allowed,
    "run-finished.json": run_finished,
    "job-silent.json": silence("job-silent.json"),
    "job-recovered.json": silence("job-recovered.json"),
}


# --- the pages and the files ------------------------------------------------------------------


def test_given_the_pages_then_every_example_file_is_shown_by_one() -> None:
    shown = {path for _, path, _ in includes()}
    unshown = [p for p in ids(samples()) if f"examples/{p}" not in shown]
    assert unshown == [], f"example files no page includes: {unshown}"


def test_given_the_pages_then_none_shows_a_json_yaml_or_python_sample_inline() -> None:
    inline = []
    for page in pages():
        lines = page.read_text().splitlines()
        for number, line in enumerate(lines[:-1]):
            after = lines[number + 1].strip()
            if FENCE.match(line.strip()) and not (INCLUDE.match(after) or after == BLOCK):
                inline.append(f"{page.relative_to(ROOT)}:{number + 1}")
    assert inline == [], f"samples to move into examples/: {inline}"


@pytest.mark.parametrize(
    ("page", "path", "lines"),
    [i for i in includes() if i[2] and i[1].endswith(".json")],
    ids=lambda value: str(value),
)
def test_given_lines_of_a_json_example_then_they_are_members_of_its_object(
    page: Path, path: str, lines: tuple[int, int]
) -> None:
    """A page showing a part of an example (``"retry": {…}``) shows members of it as they are:
    the lines, in braces, are an object whose every member is the file's."""
    text = (ROOT / path).read_text().splitlines()
    first, last = lines
    assert 1 <= first <= last <= len(text), f"{page}: {path} has {len(text)} lines"
    part = json.loads("{" + "\n".join(text[first - 1 : last]) + "}")
    whole = json.loads("\n".join(text))
    assert part
    assert {key: whole.get(key) for key in part} == part


def table_fields(page: Path) -> set[str]:
    """The fields the first table of a page names in its first column (``a``, ``b``)."""
    fields: set[str] = set()
    for line in page.read_text().split("\n\n| Field |", 1)[1].split("\n\n", 1)[0].splitlines():
        first = line.split("|")[1] if line.startswith("|") else ""
        fields |= set(re.findall(r"`([a-z_]+)`", first))
    return fields


def test_given_the_runs_page_then_its_table_names_every_field_a_run_answer_has() -> None:
    from chronoq.openapi import Run

    schema = Run.model_json_schema(mode="serialization")
    assert table_fields(DOCS / "api" / "runs.md") == set(schema["properties"])


def test_given_the_jobs_page_then_its_table_names_every_field_a_job_takes() -> None:
    from chronoq.domain.jobs import JobSpec

    assert table_fields(DOCS / "api" / "jobs.md") == set(JobSpec.model_fields)
