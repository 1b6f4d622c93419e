"""The runs stream's filter (chronoq.aws.streams, as chronoq local applies it through
local.drivers.stream_filter): only a record that ends a run, and only if the topic hears of
its status or its job asked to be notified, reaches the notifier."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.aws.streams import matches, notifier_filters
from chronoq.domain.notifications import topic_statuses
from chronoq.domain.runs import TERMINAL_STATUSES, RunStatus
from chronoq.local.drivers import stream_filter

DEFAULT = topic_statuses(r.DEFAULT_TOPIC_STATUSES)
EVERY_FINAL = frozenset(TERMINAL_STATUSES)


def record(
    event: str, old: str | None, new: str | None, notify: bool | None = None
) -> dict[str, Any]:
    """A stream record of a run item (``notify``: the item's attribute; None: absent)."""
    change: dict[str, Any] = {"Keys": {"job_id": {"S": "j"}, "run_id": {"S": "r"}}}
    if old is not None:
        change["OldImage"] = {"status": {"S": old}, **_mark(notify)}
    if new is not None:
        change["NewImage"] = {"status": {"S": new}, **_mark(notify)}
    return {"eventName": event, "eventSource": "aws:dynamodb", "dynamodb": change}


def _mark(notify: bool | None) -> dict[str, Any]:
    return {} if notify is None else {"notify": {"BOOL": notify}}


@pytest.mark.parametrize(
    ("event", "old", "new", "notify", "kept"),
    [
        ("INSERT", None, "MISSED", None, True),  # written ended (dispatcher), a topic status
        ("INSERT", None, "SKIPPED", None, False),  # nobody asked
        ("INSERT", None, "SKIPPED", True, True),  # its job asked
        ("INSERT", None, "SCHEDULED", True, False),  # not ended
        ("MODIFY", "RUNNING", "FAILED", None, True),
        ("MODIFY", "RUNNING", "TIMED_OUT", None, True),
        ("MODIFY", "RUNNING", "SUCCEEDED", None, False),  # the common case: nobody asked
        ("MODIFY", "RUNNING", "SUCCEEDED", False, False),
        ("MODIFY", "RUNNING", "SUCCEEDED", True, True),
        ("MODIFY", "QUEUED", "CANCELLED", True, True),
        ("MODIFY", "QUEUED", "RUNNING", True, False),
        ("MODIFY", "FAILED", "FAILED", None, False),  # a note on an ended run
        ("MODIFY", "SUCCEEDED", "SUCCEEDED", True, False),  # a note on an ended run
        ("MODIFY", "CANCELLED", "FAILED", True, False),  # the state machine catching up
        ("REMOVE", "SUCCEEDED", None, True, False),
    ],
)
def test_given_the_default_topic_statuses_when_records_are_filtered_then_only_ended_runs_someone_asked_about_pass(
    event: str, old: str | None, new: str | None, notify: bool | None, kept: bool
) -> None:
    keep = stream_filter(notifier_filters(DEFAULT))

    assert keep(record(event, old, new, notify)) is kept


def test_given_every_final_status_for_the_topic_when_filtered_then_every_ended_run_passes() -> None:
    keep = stream_filter(notifier_filters(EVERY_FINAL))

    assert all(keep(record("MODIFY", "RUNNING", s.value)) for s in TERMINAL_STATUSES)
    assert all(keep(record("INSERT", None, s.value)) for s in TERMINAL_STATUSES)
    assert not keep(record("MODIFY", "SUCCEEDED", "SUCCEEDED", True))
    assert not keep(record("MODIFY", "QUEUED", "RUNNING", True))


def test_given_a_narrower_topic_when_filtered_then_other_statuses_pass_only_when_asked_for() -> (
    None
):
    keep = stream_filter(notifier_filters({RunStatus.SUCCEEDED}))

    assert keep(record("MODIFY", "RUNNING", "SUCCEEDED"))
    assert not keep(record("MODIFY", "RUNNING", "FAILED"))
    assert keep(record("MODIFY", "RUNNING", "FAILED", True))


AUDIENCES = [DEFAULT, EVERY_FINAL, frozenset({RunStatus.SUCCEEDED, RunStatus.CANCELLED})]
STATUSES = [s.value for s in RunStatus]


@pytest.mark.parametrize("audience", AUDIENCES, ids=lambda a: ",".join(sorted(a)))
def test_given_any_change_of_a_run_when_filtered_then_it_passes_exactly_when_it_ends_a_run_someone_is_to_hear_of(
    audience: frozenset[RunStatus],
) -> None:
    keep = stream_filter(notifier_filters(audience))
    final = {s.value for s in TERMINAL_STATUSES}
    told = {s.value for s in audience}
    changes = [
        *(("INSERT", None, new) for new in STATUSES),
        *(("MODIFY", old, new) for old, new in itertools.product(STATUSES, STATUSES)),
        *(("REMOVE", old, None) for old in STATUSES),
    ]
    for (event, old, new), notify in itertools.product(changes, (None, False, True)):
        ends = new in final and (event == "INSERT" or (event == "MODIFY" and old not in final))
        expected = ends and (new in told or notify is True)

        assert keep(record(event, old, new, notify)) is expected, (event, old, new, notify)


@pytest.mark.parametrize("audience", AUDIENCES, ids=lambda a: ",".join(sorted(a)))
def test_given_a_deployment_when_its_filters_are_built_then_they_fit_lambdas_limit_of_five(
    audience: frozenset[RunStatus],
) -> None:
    assert 1 <= len(notifier_filters(audience)) <= 5


def test_given_a_pattern_when_matched_then_values_are_compared_by_type_and_a_missing_field_matches_nothing() -> (
    None
):
    assert matches({"a": {"BOOL": [True]}}, {"a": {"BOOL": True}})
    assert not matches({"a": {"BOOL": [True]}}, {"a": {"N": 1}})
    assert not matches({"a": {"BOOL": [True]}}, {"a": {"BOOL": 1}})
    assert not matches({"a": {"S": [{"anything-but": ["X"]}]}}, {})
    assert matches({"a": {"S": [{"anything-but": ["X"]}]}}, {"a": {"S": "Y"}})
    assert not matches({"a": {"S": [{"anything-but": ["X"]}]}}, {"a": {"S": "X"}})
    with pytest.raises(ValueError, match="prefix"):
        matches({"a": [{"prefix": "x"}]}, {"a": "xy"})


def counted_record(event: str, old: str | None, new: str, counted: bool | None) -> dict[str, Any]:
    """A record of a run whose end is counted (``counted``: its mark; None: a run of another
    kind, which has none)."""
    change = record(event, old, new)
    if counted is not None:
        for image in ("OldImage", "NewImage"):
            if image in change["dynamodb"]:
                change["dynamodb"][image]["counted"] = {"BOOL": counted}
    return change


@pytest.mark.parametrize(
    ("event", "old", "new", "counted", "kept"),
    [
        ("MODIFY", "RUNNING", "SUCCEEDED", False, True),  # a backfill's run or re-run ends
        ("MODIFY", "QUEUED", "SKIPPED", False, True),  # ended by the worker, never started
        ("INSERT", None, "CANCELLED", False, True),
        ("MODIFY", "SUCCEEDED", "SUCCEEDED", False, True),  # ended, its end not counted yet
        ("MODIFY", "SUCCEEDED", "SUCCEEDED", True, False),  # its mark (or a later note)
        ("MODIFY", "SCHEDULED", "RUNNING", False, False),  # not ended
        ("MODIFY", "RUNNING", "SUCCEEDED", None, False),  # a run whose end nobody counts
        ("REMOVE", "SUCCEEDED", "SUCCEEDED", False, False),
    ],
)
def test_given_runs_whose_ends_are_counted_when_filtered_then_an_end_passes_until_it_is_marked_counted(
    event: str, old: str | None, new: str, counted: bool | None, kept: bool
) -> None:
    keep = stream_filter(notifier_filters(DEFAULT))

    assert keep(counted_record(event, old, new, counted)) is kept


@pytest.mark.parametrize("audience", [DEFAULT, EVERY_FINAL, frozenset({RunStatus.SUCCEEDED})])
def test_given_any_topic_statuses_when_the_filters_are_made_then_lambdas_five_are_not_exceeded(
    audience: frozenset[RunStatus],
) -> None:
    assert len(notifier_filters(audience)) <= 5
