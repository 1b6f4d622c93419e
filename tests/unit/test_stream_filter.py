"""The runs stream's filter (chronoq.aws.streams, as chronoq local applies it through
local.drivers.stream_filter): only a record that ends a run, and only if the topic hears of
its status or its job asked to be notified (or its slots name something its end gives back or
moves on), reaches the notifier; and a silence's record, as it is written."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.aws import codecs
from chronoq.aws.streams import matches, notifier_filters
from chronoq.domain import after, inflight, silence
from chronoq.domain.notifications import topic_statuses
from chronoq.domain.runs import TERMINAL_STATUSES, Priority, Run, RunStatus, Trigger
from chronoq.domain.silence import SilenceEvent, SilenceStatus
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
    assert matches({"a": {"S": [{"prefix": "x"}]}}, {"a": {"S": "xy"}})
    assert not matches({"a": {"S": [{"prefix": "x"}]}}, {"a": {"S": "yx"}})
    assert not matches({"a": {"S": [{"prefix": "x"}]}}, {"a": {"N": 1}})
    with pytest.raises(ValueError, match="suffix"):
        matches({"a": [{"suffix": "x"}]}, {"a": "yx"})


@pytest.mark.parametrize(
    ("old", "new", "slots", "kept"),
    [
        ("RUNNING", "SUCCEEDED", "flow#ab", True),  # the common case nobody asked about: a wake
        ("RUNNING", "SUCCEEDED", "", False),  # held no slot
        (None, "SUCCEEDED", None, False),  # (no slots noted: it never started)
        ("SUCCEEDED", "SUCCEEDED", "flow#ab", False),  # a note on an ended run
        ("SCHEDULED", "RUNNING", "flow#ab", False),  # not ended
        ("RUNNING", "FAILED", "flow#ab flow#cd", True),
        # every run that started counted among its owner's runs in flight: its count back
        ("RUNNING", "SUCCEEDED", inflight.slot(inflight.item_key("alice"), "b1800000000"), True),
        ("SCHEDULED", "RUNNING", inflight.slot(inflight.item_key("alice"), "b1"), False),
    ],
)
def test_given_a_run_that_held_flow_slots_when_it_ends_then_its_record_reaches_the_notifier_to_wake_parked_runs(
    old: str | None, new: str, slots: str | None, kept: bool
) -> None:
    keep = stream_filter(notifier_filters(DEFAULT))
    change = record("MODIFY" if old else "INSERT", old, new)
    if slots is not None:
        change["dynamodb"]["NewImage"]["slots"] = {"S": slots}

    assert keep(change) is kept


def counted_record(event: str, old: str | None, new: str) -> dict[str, Any]:
    """A record of a backfill's run or a re-run, as the codec writes it: marked ``notify``
    (quietly: its job asked for nothing) and ``counted`` false."""
    item = codecs.new_run_item(a_backfill_run(), datetime(2026, 11, 26, tzinfo=UTC))
    marks = {k: v for k, v in codecs.dump(item).items() if k in ("notify", "quiet", "counted")}
    change = record(event, old, new)
    for image in ("OldImage", "NewImage"):
        if image in change["dynamodb"]:
            change["dynamodb"][image].update(marks)
    return change


def a_backfill_run() -> Run:
    at = datetime(2026, 11, 25, tzinfo=UTC)
    return Run(
        id="job_x_20261125T000000Z-bf0123",
        job_id="job_x",
        owner="alice",
        status=RunStatus.SCHEDULED,
        priority=Priority.NORMAL,
        trigger=Trigger.BACKFILL,
        scheduled_at=at,
        backfill_id="bf0123",
    )


@pytest.mark.parametrize(
    ("event", "old", "new", "kept"),
    [
        ("MODIFY", "RUNNING", "SUCCEEDED", True),  # a backfill's run or re-run ends
        ("MODIFY", "QUEUED", "SKIPPED", True),  # ended by the worker, never started
        ("MODIFY", "SCHEDULED", "CANCELLED", True),
        ("MODIFY", "SUCCEEDED", "SUCCEEDED", False),  # its mark, or a later note
        ("MODIFY", "SCHEDULED", "RUNNING", False),  # not ended
    ],
)
def test_given_runs_whose_ends_are_counted_when_filtered_then_their_end_passes_once(
    event: str, old: str | None, new: str, kept: bool
) -> None:
    """Their ``notify`` mark takes them through the patterns of runs whose job asked: no
    pattern of their own (Lambda allows five)."""
    keep = stream_filter(notifier_filters(DEFAULT))

    assert keep(counted_record(event, old, new)) is kept
    item = codecs.dump(codecs.new_run_item(a_backfill_run(), datetime(2026, 11, 26, tzinfo=UTC)))
    assert codecs.run_from_item(item).notify is False  # (as its job asked: nothing)


@pytest.mark.parametrize("audience", [DEFAULT, EVERY_FINAL, frozenset({RunStatus.SUCCEEDED})])
def test_given_any_topic_statuses_when_the_filters_are_made_then_they_are_within_lambdas_five(
    audience: frozenset[RunStatus],
) -> None:
    assert len(notifier_filters(audience)) <= 5


# --- silence ----------------------------------------------------------------------------------

RUN_IN_FLIGHT = inflight.slot(inflight.item_key("alice"), "b1800000000")


@pytest.mark.parametrize("audience", AUDIENCES, ids=lambda a: ",".join(sorted(a)))
@pytest.mark.parametrize(
    ("old", "new", "slots", "kept"),
    [
        ("RUNNING", "SUCCEEDED", f"{RUN_IN_FLIGHT} {silence.slot('job_x')}", True),
        ("RUNNING", "SUCCEEDED", silence.slot("job_x"), True),  # (even were it not counted)
        ("RUNNING", "SUCCEEDED", f"flow#ab {silence.slot('job_x')}", True),
        ("SUCCEEDED", "SUCCEEDED", silence.slot("job_x"), False),  # a note on an ended run
        ("SCHEDULED", "RUNNING", silence.slot("job_x"), False),  # not ended
    ],
)
def test_given_a_run_of_a_job_with_expect_when_it_succeeds_then_its_end_reaches_the_notifier(
    audience: frozenset[RunStatus], old: str, new: str, slots: str, kept: bool
) -> None:
    keep = stream_filter(notifier_filters(audience))
    change = record("MODIFY", old, new)
    change["dynamodb"]["NewImage"]["slots"] = {"S": slots}

    assert keep(change) is kept
    assert silence.expects(slots) is True


def silence_record(event: str, old: str | None, new: str | None) -> dict[str, Any]:
    """A stream record of a silence's record, as the codec writes it."""
    at = datetime(2026, 11, 26, tzinfo=UTC)
    event_ = SilenceEvent(
        job_id="job_x",
        owner="alice",
        status=SilenceStatus(new or old or ""),
        within=3600,
        silent_since=at,
    )
    image = codecs.dump(codecs.silence_event_item(event_, at))
    change: dict[str, Any] = {"Keys": {"job_id": image["job_id"], "run_id": image["run_id"]}}
    if old is not None:
        change["OldImage"] = {**image, "status": {"S": old}}
    if new is not None:
        change["NewImage"] = {**image, "status": {"S": new}, "notified_sns": {"S": "published"}}
    return {"eventName": event, "eventSource": "aws:dynamodb", "dynamodb": change}


@pytest.mark.parametrize("audience", AUDIENCES, ids=lambda a: ",".join(sorted(a)))
@pytest.mark.parametrize(
    ("event", "old", "new", "kept"),
    [
        ("INSERT", None, "SILENT", True),  # a silence noted: written once
        ("INSERT", None, "RECOVERED", True),  # its end: written once
        ("MODIFY", "SILENT", "SILENT", False),  # a note of how a notification went
        ("MODIFY", "RECOVERED", "RECOVERED", False),
        ("REMOVE", "SILENT", None, False),  # expired
    ],
)
def test_given_a_silence_record_when_filtered_then_only_its_writing_reaches_the_notifier(
    audience: frozenset[RunStatus], event: str, old: str | None, new: str | None, kept: bool
) -> None:
    keep = stream_filter(notifier_filters(audience))

    assert keep(silence_record(event, old, new)) is kept


# --- completion triggers ------------------------------------------------------------------------


@pytest.mark.parametrize("audience", AUDIENCES, ids=lambda a: ",".join(sorted(a)))
@pytest.mark.parametrize(
    ("old", "new", "slots", "kept"),
    [
        ("RUNNING", "SUCCEEDED", after.slot(["job_d"]), True),  # (even were it not counted)
        ("RUNNING", "FAILED", after.slot(["job_d", "job_e"]), True),
        ("RUNNING", "SUCCEEDED", f"{RUN_IN_FLIGHT} {after.slot(['job_d'])}", True),
        ("SUCCEEDED", "SUCCEEDED", after.slot(["job_d"]), False),  # a note on an ended run
        ("SCHEDULED", "RUNNING", after.slot(["job_d"]), False),  # not ended
    ],
)
def test_given_a_run_of_a_followed_job_when_it_ends_then_its_end_reaches_the_notifier(
    audience: frozenset[RunStatus], old: str, new: str, slots: str, kept: bool
) -> None:
    keep = stream_filter(notifier_filters(audience))
    change = record("MODIFY", old, new)
    change["dynamodb"]["NewImage"]["slots"] = {"S": slots}

    assert keep(change) is kept
    assert after.followers_in(slots) == sorted(slots.split("#")[-1].split(","))


def test_given_a_success_nobody_asked_about_and_nothing_follows_then_it_does_not_pass() -> None:
    """Ends of jobs that nothing follows cost nothing more: no slot, no pass."""
    keep = stream_filter(notifier_filters(DEFAULT))
    change = record("MODIFY", "RUNNING", "SUCCEEDED")
    change["dynamodb"]["NewImage"]["slots"] = {"S": ""}
    assert keep(change) is False
