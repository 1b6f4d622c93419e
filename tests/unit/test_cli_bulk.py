"""``chronoq jobs pause -l KEY=VALUE`` and ``chronoq jobs resume -l KEY=VALUE`` against the api
function's handler over the fakes: the label selector sent as repeated ``label`` parameters,
``next_token`` followed to the last page, each job paused (resumed) and each skipped printed;
``chronoq jobs pause JOB`` unchanged."""

from __future__ import annotations

import json

from chronoq.domain.jobs import JobState

from tests.builders import Fakes
from tests.unit.cli_on_fakes import HandlerApi, api, chronoq, fakes

__all__ = ["api", "fakes"]  # (fixtures)


def create(fakes: Fakes, name: str, *labels: str) -> str:
    flags = [arg for label in labels for arg in ("--label", label)]
    chronoq("jobs", "create", "--name", name, "--every", "10m", "--http", "https://e.x", *flags)
    fakes.clock.advance(1)  # (listed in order of creation)
    return next(j.id for j in fakes.store.jobs.values() if j.name == name)


def state(fakes: Fakes, job_id: str) -> JobState:
    return fakes.store.jobs[job_id].as_of(fakes.clock()).state


def test_given_labelled_jobs_when_paused_by_label_then_every_page_is_followed_and_each_job_printed(
    api: HandlerApi, fakes: Fakes
) -> None:
    data = [create(fakes, f"data-{n}", "team=data", "env=prod") for n in range(5)]
    other = create(fakes, "data-dev", "team=data", "env=dev")
    chronoq("jobs", "pause", data[0])

    out = chronoq("jobs", "pause", "-l", "team=data", "-l", "env=prod", "--limit", "2")

    bulk = [p for p in api.paths() if p.startswith("POST /jobs/pause?")]
    assert len(bulk) == 3  # (5 jobs, 2 a page)
    assert all("label=env%3Dprod" in p and "label=team%3Ddata" in p for p in bulk)
    assert "next_token=" not in bulk[0]
    assert all("next_token=" in p for p in bulk[1:])
    lines = out.stdout.splitlines()
    assert sorted(line.split()[:3] for line in lines) == sorted(
        [
            ["skipped", data[0], "data-0"],
            *(["paused", job_id, f"data-{n}"] for n, job_id in list(enumerate(data))[1:]),
        ]
    )
    assert "already_paused" in next(line for line in lines if line.startswith("skipped"))
    assert "4 paused, 1 skipped" in out.stderr
    assert {state(fakes, j) for j in data} == {JobState.PAUSED}
    assert state(fakes, other) is JobState.ACTIVE


def test_given_paused_jobs_when_resumed_by_label_as_json_then_the_resumed_and_skipped_are_listed(
    api: HandlerApi, fakes: Fakes
) -> None:
    paused = [create(fakes, f"nightly-{n}", "team=data") for n in range(2)]
    active = create(fakes, "hourly", "team=data")
    chronoq("jobs", "pause", "-l", "team=data")
    chronoq("jobs", "resume", active)

    out = chronoq("jobs", "resume", "-l", "team=data", "-o", "json")

    answer = json.loads(out.stdout)
    assert [j["id"] for j in answer["resumed"]] == paused
    assert [(j["id"], j["reason"]) for j in answer["skipped"]] == [(active, "not_paused")]
    assert {state(fakes, j) for j in [*paused, active]} == {JobState.ACTIVE}


def test_given_one_job_when_paused_by_id_then_it_works_as_before(
    api: HandlerApi, fakes: Fakes
) -> None:
    job_id = create(fakes, "nightly", "team=data")

    chronoq("jobs", "pause", job_id)

    assert api.paths()[-1] == f"POST /jobs/{job_id}/pause"
    assert state(fakes, job_id) is JobState.PAUSED


def test_given_neither_a_job_nor_a_label_or_both_when_paused_then_a_usage_error_sends_nothing(
    api: HandlerApi, fakes: Fakes
) -> None:
    job_id = create(fakes, "nightly", "team=data")
    sent = len(api.sent)

    chronoq("jobs", "pause", code=2)
    chronoq("jobs", "resume", job_id, "-l", "team=data", code=2)

    assert len(api.sent) == sent


def test_given_a_bad_selector_when_paused_by_label_then_the_apis_422_naming_label_is_shown(
    api: HandlerApi, fakes: Fakes
) -> None:
    create(fakes, "nightly", "team=data")

    out = chronoq("jobs", "pause", "-l", "team", code=1)

    assert "label" in out.stderr
