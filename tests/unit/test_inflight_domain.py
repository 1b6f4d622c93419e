"""An owner's count of runs in flight, its pure rules (chronoq.domain.inflight): a run's
bucket is its worst-case end rounded up coarser the further it is, a bucket past that end
(and the grace) no longer counts, and a run's slots name its count unmistakably."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from chronoq.domain import flow, inflight
from chronoq.domain.inflight import InFlight

NOW = datetime(2026, 11, 28, 12, 0, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("worst", "end"),
    [
        (0, datetime(2026, 11, 28, 12, 1, tzinfo=UTC)),  # within the hour: the minute after
        (89, datetime(2026, 11, 28, 12, 2, tzinfo=UTC)),
        (3599, datetime(2026, 11, 28, 13, 1, tzinfo=UTC)),
        (3600, datetime(2026, 11, 28, 14, 0, tzinfo=UTC)),  # within the day: the hour after
        (86400, datetime(2026, 11, 30, 0, 0, tzinfo=UTC)),  # beyond: the day after
    ],
)
def test_given_a_runs_worst_case_when_bucketed_then_its_end_is_rounded_up_never_down(
    worst: float, end: datetime
) -> None:
    bucket = inflight.end_bucket(NOW, worst)

    assert inflight.bucket_end(bucket) == int(end.timestamp())
    assert inflight.bucket_end(bucket) >= NOW.timestamp() + worst


def test_given_buckets_when_time_passes_then_only_those_past_their_end_and_the_grace_expire() -> (
    None
):
    soon, later = inflight.end_bucket(NOW, 60), inflight.end_bucket(NOW, 7200)
    count = InFlight(5, {soon: 3, later: 2})
    end = datetime.fromtimestamp(inflight.bucket_end(soon), UTC)
    grace = timedelta(seconds=inflight.BUCKET_GRACE_SECONDS)

    assert count.expired(end + grace) == {}
    assert count.live(end + grace) == 5
    assert count.expired(end + grace + timedelta(seconds=1)) == {soon: 3}
    assert count.live(end + grace + timedelta(seconds=1)) == 2


def test_given_slots_when_parsed_then_only_a_count_is_read_as_one() -> None:
    key = inflight.item_key("alice")
    token = inflight.slot(key, "b1800000000")

    assert inflight.parse_slot(token) == (key, "b1800000000")
    assert inflight.parse_slot(flow.item_key("alice", "api")) is None  # a flow's slot
    assert inflight.parse_slot(f"{key}@x1") is None
    assert inflight.parse_slot(f"{flow.owner_item_key('alice')}@b1") is None
    assert key.startswith(flow.ITEM_PREFIX)  # (its end passes the stream's filter)
    assert key != inflight.item_key("bob")


def test_given_room_when_admitted_then_never_more_than_wanted_nor_less_than_none() -> None:
    assert inflight.admitted(5, 0, 3) == 3
    assert inflight.admitted(2, 0, 3) == 2
    assert inflight.admitted(2, 4, 3) == 0
