"""The job fields of limited runs, labels and changes: what JobSpec takes and refuses, the
fire time of a job's last run under max_runs, label selectors, and which JobPatch fields
take null (the server's rule and the document's agree)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from chronoq.aws import codecs
from chronoq.domain import labels
from chronoq.domain import limits as lim
from chronoq.domain.jobs import Job, JobPatch, JobSpec, JobState, OnComplete
from chronoq.domain.runs import Trigger
from pydantic import ValidationError

T0 = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
SPEC: dict[str, Any] = {
    "name": "report",
    "schedule": {"type": "cron", "expression": "*/5 * * * *"},
    "target": {"type": "http", "url": "https://example.com/hook"},
}


def job(**spec: Any) -> Job:
    """A stored job created at T0, its first occurrence at 12:05 (every 5 minutes)."""
    return Job.model_validate(
        {
            **SPEC,
            **spec,
            "id": "job_1",
            "owner": "alice",
            "state": JobState.ACTIVE,
            "next_run_at": T0 + timedelta(minutes=5),
            "version": 1,
            "created_at": T0,
            "updated_at": T0,
        }
    ).with_final_run()


def minutes(n: int) -> datetime:
    return T0 + timedelta(minutes=n)


def errors(data: dict[str, Any]) -> dict[str, str]:
    """Each refused field (its path) and why."""
    with pytest.raises(ValidationError) as refused:
        JobSpec.model_validate(data)
    return {
        ".".join(str(p) for p in e["loc"] if p != "[key]"): e["msg"] for e in refused.value.errors()
    }


# --- limited runs ------------------------------------------------------------------------------


def test_given_no_max_runs_when_validated_then_the_job_is_kept_after_its_schedule_ends() -> None:
    spec = JobSpec.model_validate(SPEC)

    assert (spec.max_runs, spec.on_complete, spec.labels) == (None, OnComplete.KEEP, {})
    assert job().final_run_at is None


@pytest.mark.parametrize("bad", [0, -1, lim.MAX_RUNS + 1, True, "3", 2.5])
def test_given_a_max_runs_out_of_range_or_not_an_integer_when_validated_then_it_is_refused(
    bad: object,
) -> None:
    assert "max_runs" in errors({**SPEC, "max_runs": bad})


def test_given_an_unknown_on_complete_when_validated_then_it_is_refused() -> None:
    assert "on_complete" in errors({**SPEC, "on_complete": "archive"})


def test_given_max_runs_when_stored_then_its_last_run_is_the_nth_fire_time_from_the_first() -> None:
    assert job(max_runs=1).final_run_at == minutes(5)
    assert job(max_runs=3).final_run_at == minutes(15)
    # counted before this generation: fewer left
    assert job(max_runs=3).model_copy(update={"runs_before": 2}).with_final_run().final_run_at == (
        minutes(5)
    )


def test_given_a_schedule_that_ends_before_max_runs_when_stored_then_the_schedule_ends_it() -> None:
    ends = {**SPEC["schedule"], "end_at": minutes(12).isoformat()}

    limited = job(schedule=ends, max_runs=10)

    assert limited.final_run_at is None
    assert limited.following(minutes(10)) is None  # 12:10 was its last fire time


def test_given_max_runs_when_time_passes_its_last_run_then_the_job_reads_completed() -> None:
    limited = job(max_runs=2)

    assert limited.as_of(minutes(9)).next_run_at == minutes(10)
    assert limited.as_of(minutes(10)).state is JobState.ACTIVE  # its second to start
    done = limited.as_of(minutes(10) + timedelta(seconds=1))
    assert (done.state, done.next_run_at) == (JobState.COMPLETED, None)
    assert job().as_of(minutes(60)).state is JobState.ACTIVE  # without: on and on


def test_given_max_runs_when_an_occurrence_after_the_last_run_comes_then_it_is_not_current() -> (
    None
):
    limited = job(max_runs=2)

    assert limited.fires_at(minutes(10))
    assert not limited.fires_at(minutes(15))
    assert limited.following(minutes(10)) is None
    assert job().fires_at(minutes(15))


def test_given_a_limited_job_when_its_runs_are_counted_then_each_fire_time_that_came_counts_once() -> (
    None
):
    limited = job(max_runs=3)

    assert limited.runs_reached(minutes(4)) == 0
    assert limited.runs_reached(minutes(5)) == 1
    assert limited.runs_reached(minutes(14)) == 2
    assert limited.runs_reached(minutes(500)) == 3  # never more than max_runs
    assert limited.model_copy(update={"runs_before": 1}).runs_reached(minutes(5)) == 2
    paused = limited.model_copy(update={"state": JobState.PAUSED, "runs_before": 2})
    assert paused.runs_reached(minutes(500)) == 2  # fire times while paused do not count
    assert job().runs_reached(minutes(500)) == 0  # no limit: nothing is counted


def test_given_a_job_deleted_on_completion_when_asked_which_run_ends_it_then_only_its_last_scheduled_one() -> (
    None
):
    once = job(max_runs=2, on_complete="delete")

    assert not once.tells_end(minutes(5), Trigger.SCHEDULE)
    assert once.tells_end(minutes(10), Trigger.SCHEDULE)
    assert not once.tells_end(minutes(10), Trigger.MANUAL)  # manual runs do not count
    assert not job(max_runs=2).tells_end(minutes(10), Trigger.SCHEDULE)  # kept: no one to tell
    notified = job(notify={"on": ["FAILED"], "webhook": "https://example.com/hook"})
    assert notified.tells_end(minutes(5), Trigger.SCHEDULE)


# --- labels ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    ["team", "app.kubernetes.io/name", "a", "A_b-c.d", "x" * 63, "example.com/" + "y" * 63],
)
def test_given_a_kubernetes_label_key_when_validated_then_it_is_taken(key: str) -> None:
    assert JobSpec.model_validate({**SPEC, "labels": {key: "v"}}).labels == {key: "v"}


@pytest.mark.parametrize(
    "key",
    [
        "",
        "-team",
        "team-",
        "has space",
        "x" * 64,
        "Example.com/team",  # prefixes are lower case
        "a/b/c",
        "/team",
        "team/",
        ("a" * 63 + ".") * 4 + "b/team",  # a prefix longer than 253
        "t=1",
        "t,1",
    ],
)
def test_given_a_label_key_kubernetes_refuses_when_validated_then_it_is_refused_by_name(
    key: str,
) -> None:
    refused = errors({**SPEC, "labels": {key: "v"}})

    assert list(refused) == [f"labels.{key}"]
    assert "not a label key" in refused[f"labels.{key}"]


@pytest.mark.parametrize("value", ["", "data", "v1.2_3-x", "z" * 63])
def test_given_a_kubernetes_label_value_when_validated_then_it_is_taken(value: str) -> None:
    assert JobSpec.model_validate({**SPEC, "labels": {"k": value}}).labels["k"] == value


@pytest.mark.parametrize("value", ["-x", "x-", "a b", "z" * 64, "a,b", "a=b", 1, None, True])
def test_given_a_label_value_kubernetes_refuses_when_validated_then_it_is_refused(
    value: object,
) -> None:
    assert list(errors({**SPEC, "labels": {"k": value}})) == ["labels.k"]


def test_given_more_than_twenty_labels_when_validated_then_they_are_refused() -> None:
    twenty = {f"k{i}": "v" for i in range(lim.MAX_LABELS)}

    assert len(JobSpec.model_validate({**SPEC, "labels": twenty}).labels) == 20
    assert list(errors({**SPEC, "labels": {**twenty, "one-more": "v"}})) == ["labels"]


def test_given_selectors_when_parsed_then_each_is_a_key_and_a_value_and_all_must_match() -> None:
    wanted = labels.selectors(["team=data", "env=", "team=data"])

    assert wanted == (("env", ""), ("team", "data"))
    assert labels.matches({"team": "data", "env": "", "x": "y"}, wanted)
    assert not labels.matches({"team": "data"}, wanted)
    assert not labels.matches({"team": "web", "env": ""}, wanted)
    assert labels.matches({}, ())


@pytest.mark.parametrize("bad", ["team", "=data", "team=da ta", "bad key=x"])
def test_given_a_selector_that_is_not_key_equals_value_when_parsed_then_it_is_refused(
    bad: str,
) -> None:
    with pytest.raises(ValueError, match="not a"):
        labels.selectors([bad])


# --- which JobPatch fields take null -----------------------------------------------------------

NULLABLE = {"notify", "output_location", "max_runs", "flow", "expect", "version"}


def test_given_a_patch_when_a_field_is_null_then_only_those_that_can_be_removed_take_it() -> None:
    for field in sorted(set(JobPatch.model_fields) - NULLABLE):
        with pytest.raises(ValidationError) as refused:
            JobPatch.model_validate({field: None})
        assert refused.value.errors()[0]["loc"][0] == field
    for field in sorted(NULLABLE):
        assert JobPatch.model_validate({field: None}).model_dump(exclude_unset=True) == {
            field: None
        }


def test_given_the_patch_schema_when_read_then_exactly_the_fields_that_take_null_are_nullable() -> (
    None
):
    properties = JobPatch.model_json_schema()["properties"]

    def nullable(schema: dict[str, Any]) -> bool:
        return {"type": "null"} in schema.get("anyOf", [])

    assert {name for name, schema in properties.items() if nullable(schema)} == NULLABLE
    assert all("default" not in s for n, s in properties.items() if n != "version")
    assert set(properties) == set(JobSpec.model_fields) | {"version"}


# --- what is stored ----------------------------------------------------------------------------


def test_given_a_job_that_uses_none_of_these_fields_when_stored_then_its_item_is_as_it_was() -> (
    None
):
    plain = job()

    item = codecs.job_item(plain)

    # (what the dispatcher and the worker read per run: not a byte more than before)
    assert {k for k, v in item.items() if v is not None} == {
        "job_id",
        "owner",
        "state",
        "next_run_at",
        "version",
        "created_at",
        "updated_at",
        "spec",
        "generation",
    }
    spec = json.loads(item["spec"])
    assert not {"max_runs", "on_complete", "labels", "flow"} & set(spec)
    assert "window_seconds" not in spec["schedule"]
    assert codecs.job_from_item(codecs.dump(item)) == plain


def test_given_a_job_that_uses_them_when_stored_then_they_come_back() -> None:
    limited = job(max_runs=3, on_complete="delete", labels={"team": "data"})
    limited = limited.model_copy(update={"runs_before": 1}).with_final_run()

    item = codecs.job_item(limited)

    assert (item["runs_before"], item["final_run_at"]) == (1, "2026-11-26T12:10:00Z")
    assert codecs.job_from_item(codecs.dump(item)) == limited
