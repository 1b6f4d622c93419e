"""chronoq local end to end, over HTTP and through the command line: labels and lists
filtered by them, names unique per owner, limited runs and jobs deleted once their last run
has ended, jobs as code (apply, diff, prune), the OpenAPI document's operation ids and the
PATCH fields that take null, and a client that hangs up early."""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chronoq.cli.main import cli
from click.testing import CliRunner, Result

from tests.e2e.harness import FINISHED, Jobs, Local, log_tail, poll, seconds_until
from tests.support import Sink

NEVER = {"type": "cron", "expression": "0 0 1 1 *"}


def http(sink: Sink, path: str) -> dict[str, Any]:
    return {"type": "http", "url": f"{sink.url}{path}", "method": "POST"}


@pytest.fixture
def env(local: Local, tmp_path: Path) -> dict[str, str]:
    """The command line's endpoint and token, from the environment (no profile)."""
    return {
        "CHRONOQ_URL": local.url,
        "CHRONOQ_TOKEN": local.token("alice"),
        "CHRONOQ_CONFIG": str(tmp_path / "profile.json"),
    }


def chronoq(env: dict[str, str], *args: str, code: int = 0) -> Result:
    result = CliRunner().invoke(cli, list(args), env=env)
    assert result.exit_code == code, (
        f"chronoq {' '.join(args)}: exit {result.exit_code}\n{result.stdout}\n{result.stderr}"
    )
    return result


# --- labels ------------------------------------------------------------------------------------


def test_given_labelled_jobs_when_listed_by_repeated_label_parameters_then_only_jobs_with_every_label(
    local: Local, sink: Sink, jobs: Jobs, env: dict[str, str]
) -> None:
    made = {
        name: jobs.create(
            {"name": name, "schedule": NEVER, "target": http(sink, "/x"), "labels": labels}
        )
        for name, labels in (
            ("e2e-labels-prod", {"e2e-team": "data", "env": "prod"}),
            ("e2e-labels-staging", {"e2e-team": "data", "env": "staging"}),
            ("e2e-labels-web", {"e2e-team": "web", "env": "prod"}),
        )
    }

    status, page = local.call("GET", "/jobs?label=e2e-team%3Ddata&label=env%3Dprod")
    assert status == 200
    assert [j["id"] for j in page["jobs"]] == [made["e2e-labels-prod"]["id"]]
    _, data = local.call("GET", "/jobs?label=e2e-team=data")
    assert {j["name"] for j in data["jobs"]} == {"e2e-labels-prod", "e2e-labels-staging"}
    status, refused = local.call("GET", "/jobs?label=e2e-team")
    assert (status, refused["error"]["field"]) == (422, "label")

    listed = chronoq(env, "jobs", "list", "-l", "e2e-team=data", "-l", "env=staging").stdout
    (header, row) = listed.splitlines()
    assert header.split()[-1] == "LABELS"
    assert row.split()[1] == "e2e-labels-staging"
    assert row.split()[-1] == "e2e-team=data,env=staging"


# --- names -------------------------------------------------------------------------------------


def test_given_a_name_when_jobs_are_created_with_it_at_once_then_one_is_created_and_the_others_refused_naming_it(
    local: Local, sink: Sink, jobs: Jobs
) -> None:
    body = {"name": "e2e-unique", "schedule": NEVER, "target": http(sink, "/x")}
    start = threading.Barrier(4)
    answers: list[tuple[int, Any]] = []

    def create() -> None:
        start.wait()
        answers.append(jobs.post(body))

    threads = [threading.Thread(target=create) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(status for status, _ in answers) == [201, 409, 409, 409]
    refused = next(answer for status, answer in answers if status == 409)
    assert refused["error"]["code"] == "conflict"
    assert refused["error"]["field"] == "name"
    assert jobs.post(body, user="bob")[0] == 201  # another owner's


# --- limited runs, deleted on completion -------------------------------------------------------


def test_given_a_one_time_job_deleted_on_completion_when_its_run_has_ended_then_it_is_gone_and_its_run_readable(
    local: Local, sink: Sink, jobs: Jobs
) -> None:
    job, at = jobs.create_at(
        {"name": "e2e-once", "target": http(sink, "/once"), "on_complete": "delete"}, lead=2
    )
    assert (job["on_complete"], job["max_runs"]) == ("delete", None)

    poll(
        lambda: local.call("GET", f"/jobs/{job['id']}")[0] == 404,
        seconds_until(at) + 60,
        "the job deleted once its run ended",
    )

    status, page = local.call("GET", f"/runs?job_id={job['id']}")
    assert status == 200
    (run,) = page["runs"]
    assert run["status"] in FINISHED
    assert len(sink.hits_to("/once")) == 1
    assert jobs.post({**job_body(job), "schedule": NEVER})[0] == 201  # its name is free again


def job_body(job: dict[str, Any]) -> dict[str, Any]:
    return {k: job[k] for k in ("name", "target")}


def test_given_max_runs_when_a_job_is_created_and_changed_then_its_last_run_and_what_takes_null_agree_with_the_document(
    local: Local, sink: Sink, jobs: Jobs
) -> None:
    every_5 = {"type": "cron", "expression": "*/5 * * * *"}
    job = jobs.create(
        {"name": "e2e-limited", "schedule": every_5, "target": http(sink, "/x"), "max_runs": 3}
    )
    _, preview = local.call("POST", "/schedules/preview", body={"schedule": every_5, "count": 3})
    assert job["final_run_at"] == preview["fire_times"][2]["utc"]

    status, unlimited = local.call("PATCH", f"/jobs/{job['id']}", body={"max_runs": None})
    assert (status, unlimited["max_runs"], unlimited["final_run_at"]) == (200, None, None)
    _, document = local.call("GET", "/openapi.json")
    patch = document["components"]["schemas"]["JobPatch"]["properties"]
    for field, schema in sorted(patch.items()):
        nullable = {"type": "null"} in schema.get("anyOf", [])
        status, answer = local.call("PATCH", f"/jobs/{job['id']}", body={field: None})
        assert status == (200 if nullable else 422), (field, answer)
        if not nullable:
            assert answer["error"]["field"] == field


# --- jobs as code ------------------------------------------------------------------------------


@pytest.fixture
def folder(tmp_path: Path, sink: Sink, local: Local) -> Iterator[Path]:
    """Two job files; every job they make is deleted afterwards."""
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "nightly.yaml").write_text(
        "name: e2e-apply-nightly\n"
        "schedule: {type: cron, expression: '0 2 * * *', timezone: Europe/Berlin}\n"
        f"target: {{type: http, url: '{sink.url}/nightly'}}\n"
        "labels: {team: data}\n"
    )
    poll_job = {
        "name": "e2e-apply-poll",
        "schedule": {"type": "rate", "every": "5 minutes"},
        "target": {"type": "http", "url": f"{sink.url}/poll", "method": "GET"},
    }
    (jobs / "poll.json").write_text(json.dumps([poll_job]))
    try:
        yield jobs
    finally:
        _, page = local.call("GET", "/jobs?label=managed-by%3De2e&limit=100")
        for job in page["jobs"]:
            local.call("DELETE", f"/jobs/{job['id']}")


def test_given_a_folder_of_jobs_when_applied_diffed_changed_and_pruned_then_the_jobs_follow_the_files(
    local: Local, env: dict[str, str], folder: Path
) -> None:
    apply = ["apply", "-f", str(folder), "--managed-by", "e2e"]
    first = chronoq(env, *apply)
    assert first.stdout.splitlines()[-1] == "apply: 2 created, 0 updated, 0 unchanged, 0 deleted"
    again = chronoq(env, *apply)
    assert again.stdout.splitlines()[-1] == "apply: 0 created, 0 updated, 2 unchanged, 0 deleted"
    assert chronoq(env, "diff", "-f", str(folder), "--managed-by", "e2e").stdout.strip() == (
        "diff: 0 to create, 0 to update, 2 unchanged, 0 to delete"
    )

    nightly = folder / "nightly.yaml"
    nightly.write_text(nightly.read_text().replace("0 2 * * *", "30 2 * * *"))
    (folder / "poll.json").unlink()
    diff = chronoq(env, "diff", "-f", str(folder), "--managed-by", "e2e", "--prune", code=5)
    assert "to update  e2e-apply-nightly" in diff.stdout
    assert "to delete  e2e-apply-poll" in diff.stdout

    done = json.loads(chronoq(env, *apply, "--prune", "-o", "json").stdout)

    assert [j["name"] for j in done["updated"]] == ["e2e-apply-nightly"]
    assert [j["name"] for j in done["deleted"]] == ["e2e-apply-poll"]
    _, page = local.call("GET", "/jobs?label=managed-by%3De2e")
    (job,) = page["jobs"]
    assert (job["name"], job["schedule"]["expression"]) == ("e2e-apply-nightly", "30 2 * * *")
    assert job["labels"] == {"team": "data", "managed-by": "e2e"}


# --- the document ------------------------------------------------------------------------------


def test_given_the_served_document_when_read_then_operations_have_readable_ids_and_tags(
    local: Local,
) -> None:
    _, document = local.call("GET", "/openapi.json")
    operations = {
        (method, path): operation
        for path, item in document["paths"].items()
        for method, operation in item.items()
    }

    assert operations["post", "/jobs"]["operationId"] == "create_job"
    assert operations["get", "/jobs/{job_id}/runs"]["operationId"] == "list_runs"
    assert operations["post", "/jobs"]["tags"] == ["jobs"]
    assert operations["get", "/runs/{run_id}"]["tags"] == ["runs"]


# --- a client that hangs up --------------------------------------------------------------------


def test_given_a_client_that_hangs_up_before_its_answer_when_answered_then_the_log_has_no_traceback_of_it(
    local: Local,
) -> None:
    host, port = local.url.removeprefix("http://").split(":")
    token = local.token("alice")
    for _ in range(5):
        sock = socket.create_connection((host, int(port)), timeout=10)
        sock.sendall(
            f"GET /openapi.json HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
        )
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()  # (a reset: the answer, some 40 KB, cannot be written)
    # the gateway serves on (and has written, or failed to write, those answers meanwhile)
    for _ in range(5):
        assert local.call("GET", "/openapi.json")[0] == 200

    logged = log_tail(local.data_dir, lines=10_000)
    assert "BrokenPipeError" not in logged
    assert "ConnectionResetError" not in logged
