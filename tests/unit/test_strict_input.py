"""Input the API refuses that it once took: label keys and values ending in a newline, job
names that show nothing, numbers given as instants, non-ASCII digits, whitespace other than
spaces and tabs between cron fields, header and variable names and image references with a
final newline. A job stored before these rules still reads back (the STORED context)."""

from __future__ import annotations

from typing import Any

import pytest
from chronoq.domain.backfills import BackfillRequest
from chronoq.domain.base import STORED
from chronoq.domain.jobs import JobSpec
from chronoq.domain.reruns import RerunRequest
from chronoq.domain.schedules import RateSchedule
from pydantic import ValidationError

from tests.builders import HTTP_TARGET


def spec(**fields: Any) -> dict[str, Any]:
    return {
        "name": "nightly",
        "schedule": {"type": "cron", "expression": "* * * * *"},
        "target": HTTP_TARGET,
        **fields,
    }


def refused(document: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as error:
        JobSpec.model_validate(document)
    assert field in {".".join(str(p) for p in e["loc"]) for e in error.value.errors()}, error.value


@pytest.mark.parametrize(
    "labels",
    [{"team\n": "data"}, {"team": "data\n"}, {"example.com/team\n": "x"}],
)
def test_given_a_label_ending_in_a_newline_when_created_then_refused_but_a_stored_one_still_reads(
    labels: dict[str, str],
) -> None:
    with pytest.raises(ValidationError, match="label"):
        JobSpec.model_validate(spec(labels=labels))

    assert JobSpec.model_validate(spec(labels=labels), context=STORED).labels == labels


@pytest.mark.parametrize(
    "name",
    [
        " ",
        "\t",
        "\u2800",
        "\u3164",
        "\u115f",
        "\u0301",
        "\ufe0f",
        "\u200b",
        "\u3000",
        " \u0301\u2800",
    ],
)
def test_given_a_name_that_shows_nothing_when_created_then_refused_but_a_stored_one_still_reads(
    name: str,
) -> None:
    refused(spec(name=name), "name")

    assert JobSpec.model_validate(spec(name=name), context=STORED).name == name


@pytest.mark.parametrize("name", ["a", "é", "e\u0301", "データ", "🙂", "a b"])
def test_given_a_name_with_a_visible_character_when_created_then_accepted(name: str) -> None:
    assert JobSpec.model_validate(spec(name=name)).name == name


@pytest.mark.parametrize(
    "at", [1893456000, 1893456000.5, "1893456000", "2030-01-01", "١٩٩٠-01-01T00:00:00Z"]
)
def test_given_an_instant_that_is_no_iso_8601_text_when_scheduled_then_refused(at: Any) -> None:
    refused(spec(schedule={"type": "at", "at": at}), "schedule.at.at")


@pytest.mark.parametrize(
    "at", ["2030-01-01T00:00:00Z", "2030-01-01T01:00:00+01:00", "2030-01-01 00:00Z"]
)
def test_given_iso_8601_text_when_scheduled_then_accepted(at: str) -> None:
    assert JobSpec.model_validate(spec(schedule={"type": "at", "at": at})).schedule.at.year == 2030  # type: ignore[union-attr]


@pytest.mark.parametrize("model", [BackfillRequest, RerunRequest])
def test_given_a_number_as_a_range_bound_when_backfilled_or_rerun_then_refused(model: Any) -> None:
    with pytest.raises(ValidationError, match="ISO 8601"):
        model.model_validate({"from": 1893456000, "to": "2030-01-02T00:00:00Z"})


@pytest.mark.parametrize(
    "expression", ["*\u00a0* * * *", "* * * *\u3000*", "*\n* * * *", "*\u2003* * * *"]
)
def test_given_cron_fields_split_by_whitespace_other_than_spaces_and_tabs_then_refused(
    expression: str,
) -> None:
    refused(spec(schedule={"type": "cron", "expression": expression}), "schedule.cron.expression")


def test_given_cron_fields_split_by_spaces_and_tabs_when_created_then_kept_with_single_spaces() -> (
    None
):
    created = JobSpec.model_validate(spec(schedule={"type": "cron", "expression": " *\t*  * * * "}))

    assert created.schedule.expression == "* * * * *"  # type: ignore[union-attr]


@pytest.mark.parametrize("every", ["\u0661 minute", "1\u00a0minute", "\uff11 hour", "1 minute\n"])
def test_given_a_rate_with_non_ascii_digits_or_other_whitespace_when_created_then_refused(
    every: str,
) -> None:
    refused(spec(schedule={"type": "rate", "every": every}), "schedule.rate.every")


def test_given_a_rate_with_ascii_digits_and_a_tab_when_created_then_accepted() -> None:
    schedule = JobSpec.model_validate(
        spec(schedule={"type": "rate", "every": "5\tMinutes"})
    ).schedule

    assert isinstance(schedule, RateSchedule)
    assert schedule.every == "5 minutes"


@pytest.mark.parametrize(
    ("target", "field"),
    [
        ({**HTTP_TARGET, "headers": {"X-Team\n": "a"}}, "target.http.headers.X-Team\n.[key]"),
        (
            {"type": "container", "image": "nginx\n", "command": ["true"]},
            "target.container.image",
        ),
        (
            {"type": "container", "image": "nginx:v\u0661", "command": ["true"]},
            "target.container.image",
        ),
        (
            {
                "type": "container",
                "image": "nginx",
                "command": ["true"],
                "environment": {"A\n": "1"},
            },
            "target.container.environment",
        ),
    ],
)
def test_given_names_and_references_ending_in_a_newline_or_with_non_ascii_when_created_then_refused(
    target: dict[str, Any], field: str
) -> None:
    refused(spec(target=target), field)
