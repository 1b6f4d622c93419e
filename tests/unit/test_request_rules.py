"""What a request may carry, checked before anything is written: URLs and headers of http
targets, strict types, sizes of free-form fields, schedules the calendar can compute, and
the API's error shape and body checks."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.domain import limits as lim
from chronoq.domain.errors import InvalidRequest
from chronoq.domain.jobs import JobSpec
from chronoq.domain.schedules import CronSchedule, first_fire
from chronoq.domain.targets import HttpTarget
from chronoq.http_api import check_body, field_path, validation_error
from pydantic import ValidationError

NOW = datetime(2026, 11, 25, 21, 48, tzinfo=UTC)


def spec(**changes: Any) -> dict[str, Any]:
    return {
        "name": "n",
        "schedule": {"type": "rate", "every": "1 hour"},
        "target": {"type": "http", "url": "https://example.com/"},
        **changes,
    }


def error_of(document: dict[str, Any]) -> tuple[str | None, str]:
    with pytest.raises(ValidationError) as caught:
        JobSpec.model_validate(document)
    error = validation_error(caught.value.errors())
    return error.field, error.message


@pytest.mark.parametrize(
    "name",
    [
        "Host",
        "host",
        "Content-Length",
        "Transfer-Encoding",
        "Connection",
        "X-Chronoq-Run-Id",
        "x-chronoq-anything",
    ],
)
def test_given_a_reserved_header_when_a_target_sets_it_then_422_names_the_header(name: str) -> None:
    field, message = error_of(
        spec(target={"type": "http", "url": "https://e.com/", "headers": {name: "x"}})
    )

    assert field == f"target.headers.{name}"
    assert "reserved" in message


@pytest.mark.parametrize("name", ["X Foo", "X:Foo", "", "Ünïcode", "a\r\nb", "x" * 300])
def test_given_an_invalid_header_name_when_a_target_sets_it_then_422(name: str) -> None:
    field, _ = error_of(
        spec(target={"type": "http", "url": "https://e.com/", "headers": {name: "x"}})
    )

    assert field == f"target.headers.{name}"


@pytest.mark.parametrize("value", ["a\r\nX-Injected: 1", "a\nb", "a\rb", "a\x00b", "x" * 9000])
def test_given_a_bad_header_value_when_a_target_sets_it_then_422_names_the_header(
    value: str,
) -> None:
    field, _ = error_of(
        spec(target={"type": "http", "url": "https://e.com/", "headers": {"X-Foo": value}})
    )

    assert field == "target.headers.X-Foo"


def test_given_too_many_headers_when_a_target_sets_them_then_422() -> None:
    headers = {f"X-H{n}": "v" for n in range(lim.MAX_HEADERS + 1)}
    field, _ = error_of(spec(target={"type": "http", "url": "https://e.com/", "headers": headers}))

    assert field == "target.headers"


def test_given_ordinary_headers_when_a_target_sets_them_then_they_are_kept() -> None:
    target = HttpTarget.model_validate(
        {
            "type": "http",
            "url": "https://e.com/",
            "headers": {"Authorization": "Bearer x", "X-Foo": "1"},
        }
    )
    assert target.headers == {"Authorization": "Bearer x", "X-Foo": "1"}


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/",
        "file:///etc/passwd",
        "gopher://x/",
        "https://user:pass@example.com/",
        "https://user@example.com/",
        "http://example.com:99999/",
        "http://exa mple.com/",
        "//example.com",
    ],
)
def test_given_a_url_that_is_not_plain_http_when_a_target_names_it_then_422_names_target_url(
    url: str,
) -> None:
    field, _ = error_of(spec(target={"type": "http", "url": url}))

    assert field == "target.url"


def test_given_credentials_in_a_webhook_url_when_posted_then_422_names_notify_webhook() -> None:
    field, message = error_of(spec(notify={"webhook": "https://u:p@hooks.example.com/"}))

    assert (field, "credentials" in message) == ("notify.webhook", True)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"timeout_seconds": True}, "timeout_seconds"),
        ({"start_deadline_seconds": False}, "start_deadline_seconds"),
        ({"retry": {"jitter": "yes"}}, "retry.jitter"),
        ({"retry": {"max_attempts": True}}, "retry.max_attempts"),
        ({"retry": {"max_attempts": "3"}}, "retry.max_attempts"),
        ({"retry": {"backoff_rate": True}}, "retry.backoff_rate"),
        ({"retry": {"backoff_rate": float("nan")}}, "retry.backoff_rate"),
        ({"retry": {"interval_seconds": 1.5}}, "retry.interval_seconds"),
    ],
)
def test_given_a_value_of_another_type_when_posted_then_422_names_it(
    change: dict[str, Any], field: str
) -> None:
    assert error_of(spec(**change))[0] == field


def test_given_an_integral_float_when_posted_as_a_backoff_rate_then_it_is_accepted() -> None:
    assert JobSpec.model_validate(spec(retry={"backoff_rate": 3})).retry.backoff_rate == 3.0


@pytest.mark.parametrize(
    ("target", "field"),
    [
        (
            {"type": "python", "task": "m:f", "args": {"x": "y" * (lim.MAX_ARGS_BYTES + 1)}},
            "target.args",
        ),
        ({"type": "python", "task": "m:f", "args": {"x": float("inf")}}, "target.args"),
        (
            {"type": "http", "url": "https://e.com/", "body": "y" * (lim.MAX_ARGS_BYTES + 1)},
            "target.body",
        ),
    ],
)
def test_given_a_free_form_field_too_large_or_not_finite_when_posted_then_422_names_it(
    target: dict[str, Any], field: str
) -> None:
    assert error_of(spec(target=target))[0] == field


def test_given_a_name_too_long_when_posted_then_422_names_it() -> None:
    assert error_of(spec(name="n" * (lim.MAX_NAME_LENGTH + 1)))[0] == "name"


@pytest.mark.parametrize(
    "expression",
    [
        "0 0 30 2 *",
        "0 0 31 4 *",
        "*/1000000 * * * *",
        "0 */24 * * *",
        "0 0 */0 * *",
        "* * * * " + "*" * 400,
    ],
)
def test_given_a_cron_that_never_fires_or_cannot_when_posted_then_422_names_schedule_expression(
    expression: str,
) -> None:
    field, message = error_of(spec(schedule={"type": "cron", "expression": expression}))

    assert field == "schedule.expression"
    assert not message.startswith("Value error")


def test_given_a_cron_firing_once_in_years_when_asked_for_its_first_fire_then_it_is_refused() -> (
    None
):
    schedule = CronSchedule.model_validate({"type": "cron", "expression": "0 0 29 2 *"})

    assert first_fire(schedule, NOW) == datetime(2028, 2, 29, tzinfo=UTC)
    with pytest.raises(InvalidRequest) as caught:
        first_fire(schedule, datetime(2097, 1, 1, tzinfo=UTC))
    assert caught.value.field == "schedule.expression"


@pytest.mark.parametrize(
    ("schedule", "field"),
    [
        ({"type": "at", "at": "9999-12-31T23:59:59.5Z"}, "schedule.at"),
        ({"type": "at", "at": "0001-01-01T00:00:00+01:00"}, "schedule.at"),
        (
            {"type": "rate", "every": "1 hour", "start_at": "9999-06-01T00:00:00Z"},
            "schedule.start_at",
        ),
        (
            {"type": "cron", "expression": "* * * * *", "end_at": "9999-12-31T23:59:59Z"},
            "schedule.end_at",
        ),
        (
            {"type": "cron", "expression": "* * * * *", "start_at": "0001-01-01T00:00:00Z"},
            "schedule.start_at",
        ),
    ],
)
def test_given_an_instant_near_the_calendars_ends_when_posted_then_422_names_it(
    schedule: dict[str, Any], field: str
) -> None:
    assert error_of(spec(schedule=schedule))[0] == field


@pytest.mark.parametrize(
    ("location", "path"),
    [
        (("body", "schedule", "cron", "expression"), "schedule.expression"),
        (("body", "schedule", "at", "at"), "schedule.at"),
        (("target", "http", "headers", "X-Foo", "[key]"), "target.headers.X-Foo"),
        (("body", "target", "python", "args"), "target.args"),
        (("query", "limit"), "limit"),
        (("body",), None),
        (("body", "notify", "on", 0), "notify.on.0"),
    ],
)
def test_given_a_pydantic_location_when_named_then_it_is_the_path_in_the_body(
    location: tuple[str | int, ...], path: str | None
) -> None:
    assert field_path(location) == path


def event(
    body: str | None, content_type: str = "application/json", b64: bool = False
) -> dict[str, Any]:
    return {"body": body, "headers": {"content-type": content_type}, "isBase64Encoded": b64}


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ("{not json", 400, None),
        ('{"a": NaN}', 422, "a"),
        ('{"a": {"b": [1, Infinity]}}', 422, "a.b.1"),
        ('{"a": -Infinity}', 422, "a"),
        ('{"a": 1e400}', 422, "a"),
        ('{"a": ' + "9" * 4300 + "}", 422, "a"),
        ("[" * 3000 + "]" * 3000, 422, None),
        ('{"a": ' + "[" * 40 + "]" * 40 + "}", 422, "a." + ".".join(["0"] * 32)),
        ('{"a": "\\ud800"}', 422, "a"),
    ],
)
def test_given_a_body_chronoq_cannot_keep_when_checked_then_4xx_names_where(
    body: str, status: int, field: str | None
) -> None:
    error = check_body(event(body))

    assert error is not None
    assert (error.status, error.field) == (status, field)


def test_given_a_body_over_the_limit_when_checked_then_413() -> None:
    error = check_body(event(json.dumps({"a": "x" * r.MAX_REQUEST_BYTES})))

    assert error is not None
    assert (error.status, error.code) == (413, "payload_too_large")


@pytest.mark.parametrize(
    "content_type",
    [
        "multipart/form-data",
        "multipart/form-data; boundary=x",
        "text/plain",
        "application/x-www-form-urlencoded",
    ],
)
def test_given_a_body_that_is_not_json_by_its_type_when_checked_then_415(content_type: str) -> None:
    error = check_body(event(base64.b64encode(b"--x\r\n").decode(), content_type, b64=True))

    assert error is not None
    assert (error.status, error.code) == (415, "unsupported_media_type")


@pytest.mark.parametrize(
    "content_type",
    ["application/json", "application/json; charset=utf-8", "application/merge-patch+json", ""],
)
def test_given_a_json_body_when_checked_then_it_passes(content_type: str) -> None:
    assert check_body(event('{"a": [1, 2.5, "x", null, true]}', content_type)) is None
