"""``chronoq apply`` and ``chronoq diff`` (jobs as code) over the use cases on the fakes: the
command line speaks to an API that serves the fakes' job operations as the api function
does, so whole applies run in milliseconds. (tests/cli/test_against_local.py applies against
chronoq local too.)"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from chronoq.cli import apply as applying
from chronoq.cli.client import Answer
from chronoq.cli.errors import ApiError
from chronoq.cli.jobspec import BadInput
from chronoq.cli.main import cli
from chronoq.domain.errors import ChronoqError, Conflict, InvalidRequest, NotFound
from chronoq.domain.jobs import JobPatch, JobSpec
from click.testing import CliRunner, Result
from pydantic import ValidationError

from tests.builders import OWNER, Fakes

NIGHTLY = """\
name: nightly
schedule: {type: cron, expression: "0 2 * * *", timezone: Europe/Berlin}
target: {type: http, url: "https://example.com/nightly"}
labels: {team: data}
"""
TWO = """\
name: poll
schedule: {type: rate, every: 5 minutes}
target: {type: http, url: "https://example.com/poll", method: GET}
priority: high
---
name: once
schedule: {type: at, at: "2027-01-04T09:00:00+01:00"}
target: {type: python, task: "chronoq.tasks:echo", args: {n: 1}}
max_runs: 1
on_complete: delete
"""
EXPORT = [
    {
        "name": "export",
        "schedule": {"type": "cron", "expression": "30 * * * *"},
        "target": {"type": "container", "image": "alpine:3", "command": ["true"]},
    }
]


class FakeApi:
    """The API as the api function serves it, over the fakes' job operations (the jobs'
    JSON as it answers them); every call noted."""

    def __init__(self, fakes: Fakes, owner: str = OWNER) -> None:
        self.fakes = fakes
        self.owner = owner
        self.calls: list[str] = []

    def call(self, method: str, path: str, body: Any = None, query: Any = None) -> Any:
        self.calls.append(f"{method} {path}")
        jobs = self.fakes.jobs
        try:
            if (method, path) == ("POST", "/jobs"):
                return _view(jobs.create_job(self.owner, JobSpec.model_validate(body)))
            job_id = path.removeprefix("/jobs/")
            if method == "PATCH":
                return _view(jobs.update_job(self.owner, job_id, JobPatch.model_validate(body)))
            if method == "DELETE":
                jobs.delete_job(self.owner, job_id)
                return None
        except ValidationError as error:
            raise ApiError(
                422, {"error": {"code": "invalid_field", "message": str(error)}}
            ) from None
        except ChronoqError as error:
            status = {NotFound: 404, Conflict: 409, InvalidRequest: 422}
            code = next(s for kind, s in status.items() if isinstance(error, kind))
            raise ApiError(code, {"error": {"code": "refused", "message": str(error)}}) from None
        raise AssertionError(f"no such call in this test: {method} {path}")

    def send(self, method: str, path: str, body: Any = None, query: Any = None) -> Answer:
        return Answer(200, self.call(method, path, body, query))

    def pages(self, path: str, key: str, *_: Any, **__: Any) -> Any:
        assert (path, key) == ("/jobs", "jobs")
        self.calls.append("GET /jobs")
        yield [_view(job) for job in self.fakes.jobs.list_jobs(self.owner)], None


def _view(job: Any) -> dict[str, Any]:
    view: dict[str, Any] = job.model_dump(mode="json", exclude={"generation", "runs_before"})
    return view


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> FakeApi:
    served = FakeApi(Fakes())
    monkeypatch.setattr("chronoq.cli.common.connect", lambda *_: served)
    return served


def chronoq(*args: str, code: int = 0, stdin: str | None = None) -> Result:
    result = CliRunner().invoke(cli, list(args), input=stdin)
    assert result.exit_code == code, f"exit {result.exit_code}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "nightly.yaml").write_text(NIGHTLY)
    (jobs / "two.yml").write_text(TWO)
    (jobs / "export.json").write_text(json.dumps(EXPORT))
    (jobs / "README.md").write_text("not a job")
    return jobs


def names(api: FakeApi) -> dict[str, dict[str, Any]]:
    return {job.name: _view(job) for job in api.fakes.jobs.list_jobs(api.owner)}


# --- apply -------------------------------------------------------------------------------------


def test_given_a_folder_of_job_files_when_applied_then_each_job_is_created_labelled_and_summed_up(
    api: FakeApi, folder: Path
) -> None:
    result = chronoq("apply", "-f", str(folder))

    jobs = names(api)
    assert sorted(jobs) == ["export", "nightly", "once", "poll"]
    assert jobs["nightly"]["labels"] == {"team": "data", "managed-by": "chronoq-apply"}
    assert (jobs["once"]["max_runs"], jobs["once"]["on_complete"]) == (1, "delete")
    assert jobs["export"]["timeout_seconds"] == 300  # a container's default
    lines = result.stdout.splitlines()
    assert lines[-1] == "apply: 4 created, 0 updated, 0 unchanged, 0 deleted"
    assert re.match(rf"created\s+export\s+{jobs['export']['id']}\s+\(.*export.json\)", lines[0])
    assert "two.yml#2" in lines[3]  # the second job of two.yml


def test_given_applied_files_when_applied_again_then_nothing_changes(
    api: FakeApi, folder: Path
) -> None:
    chronoq("apply", "-f", str(folder))
    before = names(api)
    api.calls.clear()

    again = chronoq("apply", "-f", str(folder))

    assert again.stdout.splitlines()[-1] == "apply: 0 created, 0 updated, 4 unchanged, 0 deleted"
    assert api.calls == ["GET /jobs"]  # one listing, no change asked for
    assert names(api) == before
    assert chronoq("diff", "-f", str(folder)).stdout.strip() == (
        "diff: 0 to create, 0 to update, 4 unchanged, 0 to delete"
    )


def test_given_a_file_that_changes_a_job_when_applied_then_only_its_changed_fields_are_patched(
    api: FakeApi, folder: Path
) -> None:
    chronoq("apply", "-f", str(folder))
    before = names(api)
    (folder / "nightly.yaml").write_text(
        NIGHTLY.replace("0 2 * * *", "0 3 * * *") + "priority: low\n"
    )

    result = chronoq("apply", "-f", str(folder))

    after = names(api)
    assert after["nightly"]["id"] == before["nightly"]["id"]
    assert after["nightly"]["schedule"]["expression"] == "0 3 * * *"
    assert after["nightly"]["priority"] == "low"
    assert after["poll"] == before["poll"]
    line = next(line for line in result.stdout.splitlines() if "nightly" in line)
    assert line.split()[:4] == ["updated", "nightly", before["nightly"]["id"], "schedule,"]
    assert "priority" in line


def test_given_a_field_removed_from_a_file_when_applied_then_the_job_gets_the_default_back(
    api: FakeApi, folder: Path
) -> None:
    chronoq("apply", "-f", str(folder))
    (folder / "two.yml").write_text(TWO.replace("priority: high\n", ""))

    chronoq("apply", "-f", str(folder))

    assert names(api)["poll"]["priority"] == "normal"


def test_given_jobs_no_longer_in_the_files_when_applied_with_prune_then_only_those_labelled_alike_are_deleted(
    api: FakeApi, folder: Path, tmp_path: Path
) -> None:
    chronoq("apply", "-f", str(folder))
    other = tmp_path / "other.yaml"  # another set of files, managed apart
    other.write_text(NIGHTLY.replace("nightly", "theirs"))
    chronoq("apply", "-f", str(other), "--managed-by", "team-web")
    api.fakes.jobs.create_job(
        OWNER, JobSpec.model_validate({**json.loads(json.dumps(EXPORT[0])), "name": "by-hand"})
    )
    (folder / "two.yml").unlink()

    kept = chronoq("apply", "-f", str(folder))
    assert sorted(names(api)) == ["by-hand", "export", "nightly", "once", "poll", "theirs"]
    assert "0 deleted" in kept.stdout

    pruned = chronoq("apply", "-f", str(folder), "--prune")

    assert sorted(names(api)) == ["by-hand", "export", "nightly", "theirs"]
    assert pruned.stdout.splitlines()[-1] == "apply: 0 created, 0 updated, 2 unchanged, 2 deleted"


def test_given_a_job_the_api_refuses_when_applied_then_the_others_are_applied_and_the_exit_code_is_1(
    api: FakeApi, tmp_path: Path
) -> None:
    files = tmp_path / "jobs.json"
    bad_task = {**EXPORT[0], "name": "bad", "target": {"type": "python", "task": "os:system"}}
    files.write_text(json.dumps([bad_task, {**EXPORT[0], "name": "good"}]))

    result = chronoq("apply", "-f", str(files), code=1)

    assert sorted(names(api)) == ["good"]
    assert "target.task" in result.stderr
    assert result.stdout.splitlines()[-1] == (
        "apply: 1 created, 0 updated, 0 unchanged, 0 deleted, 1 failed"
    )


def test_given_json_output_when_applied_then_each_job_is_listed_under_what_was_done(
    api: FakeApi, folder: Path
) -> None:
    chronoq("apply", "-f", str(folder))
    (folder / "nightly.yaml").write_text(NIGHTLY.replace("team: data", "team: web"))

    done = json.loads(chronoq("apply", "-f", str(folder), "-o", "json").stdout)

    assert done["managed_by"] == "chronoq-apply"
    assert [(j["name"], j["fields"]) for j in done["updated"]] == [("nightly", ["labels"])]
    assert sorted(j["name"] for j in done["unchanged"]) == ["export", "once", "poll"]
    assert done["created"] == done["deleted"] == done["failed"] == []


# --- diff --------------------------------------------------------------------------------------


def test_given_files_unlike_the_jobs_when_diffed_then_what_apply_would_do_is_shown_exit_5_and_nothing_changes(
    api: FakeApi, folder: Path
) -> None:
    chronoq("apply", "-f", str(folder))
    before = names(api)
    (folder / "nightly.yaml").write_text(NIGHTLY.replace("0 2 * * *", "15 2 * * *"))
    (folder / "two.yml").unlink()
    (folder / "new.yaml").write_text(NIGHTLY.replace("nightly", "fresh"))

    result = chronoq("diff", "-f", str(folder), "--prune", code=5)

    assert names(api) == before
    out = result.stdout
    assert re.search(r"^to create\s+fresh\s+-", out, re.M)
    assert re.search(rf"^to update\s+nightly\s+{before['nightly']['id']}\s+schedule", out, re.M)
    assert '-    "expression": "0 2 * * *",' in out
    assert '+    "expression": "15 2 * * *",' in out
    assert re.search(rf"^to delete\s+once\s+{before['once']['id']}", out, re.M)
    assert out.splitlines()[-1] == "diff: 1 to create, 1 to update, 1 unchanged, 2 to delete"
    assert chronoq("diff", "-f", str(folder), code=5).stdout.splitlines()[-1] == (
        "diff: 1 to create, 1 to update, 1 unchanged, 0 to delete"
    )


def test_given_the_files_from_stdin_when_diffed_then_they_are_read_there(
    api: FakeApi,
) -> None:
    result = chronoq("diff", "-f", "-", "-o", "json", stdin=json.dumps(EXPORT), code=5)

    assert json.loads(result.stdout)["to_create"] == [{"name": "export", "id": None, "source": "-"}]


# --- what the files may say ----------------------------------------------------------------------


def test_given_a_rate_job_without_start_at_when_compared_then_the_start_the_api_chose_is_kept(
    api: FakeApi, tmp_path: Path
) -> None:
    path = tmp_path / "poll.yaml"
    path.write_text(TWO.split("---")[0])
    chronoq("apply", "-f", str(path))
    api.fakes.clock.advance(3600)  # (a new start_at would be an hour later now)

    assert "1 unchanged" in chronoq("diff", "-f", str(path)).stdout


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (
            "name: a\nschedule: {type: rate, every: 1 second}\ntarget: {type: http, url: x}\n",
            "schedule",
        ),
        (NIGHTLY + "---\n" + NIGHTLY, "'nightly' given more than once"),
        ("- 1\n- 2\n", "a job is an object"),
        (NIGHTLY.replace("team: data", "managed-by: someone-else"), "someone-else"),
        ("name: [\n", "not valid YAML"),
    ],
)
def test_given_files_that_cannot_be_applied_when_applied_then_usage_error_naming_the_file_and_nothing_sent(
    api: FakeApi, tmp_path: Path, content: str, says: str
) -> None:
    path = tmp_path / "jobs.yaml"
    path.write_text(content)

    result = chronoq("apply", "-f", str(path), "--managed-by", "mine", code=2)

    assert says in result.stderr
    assert api.calls == []


def test_given_files_whose_jobs_carry_one_managed_by_label_when_applied_then_it_is_theirs(
    api: FakeApi, tmp_path: Path
) -> None:
    path = tmp_path / "jobs.yaml"
    path.write_text(NIGHTLY.replace("team: data", "managed-by: team-data"))

    done = json.loads(chronoq("apply", "-f", str(path), "-o", "json").stdout)

    assert done["managed_by"] == "team-data"
    assert names(api)["nightly"]["labels"] == {"managed-by": "team-data"}


def test_given_jobs_stored_before_names_were_unique_when_applied_by_that_name_then_refused(
    api: FakeApi, folder: Path
) -> None:
    chronoq("apply", "-f", str(folder))
    job = api.fakes.jobs.list_jobs(OWNER)[0]
    twin = job.model_copy(update={"id": "job_twin"})  # (as stored before)
    api.fakes.store.jobs[twin.id] = twin

    result = chronoq("apply", "-f", str(folder), code=2)

    assert f"several of your jobs are named {job.name!r}" in result.stderr


def test_given_a_directory_when_read_recursively_or_not_then_its_job_files_in_order(
    tmp_path: Path,
) -> None:
    (tmp_path / "b.yaml").write_text(NIGHTLY)
    (tmp_path / "a.json").write_text(json.dumps(EXPORT))
    (tmp_path / "deeper").mkdir()
    (tmp_path / "deeper" / "c.yml").write_text(TWO)

    assert [p.name for p in applying.files_of((str(tmp_path),), False)] == ["a.json", "b.yaml"]  # type: ignore[union-attr]
    deep = applying.files_of((str(tmp_path),), True)
    assert [p.name for p in deep] == ["a.json", "b.yaml", "c.yml"]  # type: ignore[union-attr]
    with pytest.raises(BadInput, match="no such file"):
        applying.files_of((str(tmp_path / "nope"),), False)


def test_given_a_job_on_a_business_calendar_when_applied_again_then_its_copy_of_the_calendar_is_no_change(
    api: FakeApi, tmp_path: Path
) -> None:
    from chronoq.domain.calendars import CalendarRules

    api.fakes.calendars.put(OWNER, "holidays", CalendarRules(timezone="America/New_York"))
    (tmp_path / "close.yaml").write_text(
        "name: close\n"
        "schedule: {type: cron, expression: '0 16 * * *', timezone: America/New_York,\n"
        "           calendar: {name: holidays, on_excluded: next_business_day}}\n"
        "target: {type: http, url: 'https://example.com/close'}\n"
    )
    chronoq("apply", "-f", str(tmp_path))
    api.calls.clear()

    again = chronoq("apply", "-f", str(tmp_path))

    assert again.stdout.splitlines()[-1] == "apply: 0 created, 0 updated, 1 unchanged, 0 deleted"
    assert api.calls == ["GET /jobs"]


@pytest.mark.parametrize(
    ("schedule", "field"),
    [
        ({"type": "cron", "expression": "61 * * * *"}, "schedule.expression"),
        ({"type": "rate", "every": "30 seconds"}, "schedule.every"),
        ({"type": "at", "at": "tomorrow"}, "schedule.at"),
    ],
)
def test_given_a_bad_schedule_in_a_file_when_applied_then_the_field_is_named_as_the_api_names_it(
    api: FakeApi,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    schedule: dict[str, Any],
    field: str,
) -> None:
    from tests.unit.api_on_fakes import api_on_fakes

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # (the API's handler is imported)
    job = {"name": "bad", "schedule": schedule, "target": {"type": "http", "url": "https://e.x"}}
    with api_on_fakes() as real:
        status, answer, _ = real.call("POST", "/jobs", body=job)
    assert (status, answer["error"]["field"]) == (422, field)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(job))

    result = chronoq("apply", "-f", str(path), "--managed-by", "mine", code=2)

    assert f"{path}: {field}: " in result.stderr
    assert f"schedule.{schedule['type']}." not in result.stderr
    assert api.calls == []
