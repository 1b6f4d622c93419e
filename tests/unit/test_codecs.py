"""Items typed for DynamoDB (codecs.dump): as boto3's TypeSerializer types them, faster."""

from __future__ import annotations

import decimal
from decimal import Decimal
from typing import Any

import pytest
from boto3.dynamodb.types import TypeSerializer
from chronoq.aws import codecs


@pytest.mark.parametrize(
    "value",
    [
        "text",
        "",
        True,
        False,
        0,
        -3,
        10**37,
        -(10**37) + 1,
        Decimal("1.5"),
        b"\x00\x01",
        {"a", "b"},
        {1, 2},
        [],
        {},
        [1, "2", {"q": False, "n": None}, [b"x"]],
        {"k": "v", "z": None, "l": [{"deep": {"er": 1}}]},
    ],
)
def test_given_any_value_chronoq_writes_when_dumped_then_it_is_typed_as_type_serializer_types_it(
    value: Any,
) -> None:
    assert codecs.dump({"v": value}) == {"v": TypeSerializer().serialize(value)}


@pytest.mark.parametrize(
    ("value", "refusal"),
    [(1.5, TypeError), (10**40, decimal.Rounded), (-(10**40), decimal.Rounded)],
)
def test_given_a_value_dynamodb_cannot_hold_exactly_when_dumped_then_it_is_refused_as_by_type_serializer(
    value: Any, refusal: type[Exception]
) -> None:
    with pytest.raises(refusal):
        TypeSerializer().serialize(value)
    with pytest.raises(refusal):
        codecs.dump({"v": value})


def test_given_an_occurrence_planned_weeks_ahead_when_indexed_then_its_item_outlives_its_start() -> (
    None
):
    from datetime import UTC, datetime, timedelta

    from chronoq import resources as r
    from chronoq.domain.runs import Occurrence, Priority

    now = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    far = now + timedelta(days=30)  # a monthly job's next run
    soon = now + timedelta(minutes=1)
    occurrences = [
        Occurrence(
            job_id="job_0123456789abcdef",
            run_id=f"job_0123456789abcdef_{n}",
            scheduled_at=at,
            priority=Priority.NORMAL,
        )
        for n, at in enumerate((far, soon))
    ]

    single = codecs.occurrence_item(occurrences[0], 4, now)
    near = codecs.occurrence_item(occurrences[1], 4, now)
    packed = codecs.pack_item(occurrences, 4, now, "chain-x")

    retention = r.SCHEDULE_RETENTION_SECONDS
    assert single["expires_at"] == int(far.timestamp()) + retention  # not 2 days from now
    assert near["expires_at"] == int(soon.timestamp()) + retention
    assert packed["expires_at"] == int(far.timestamp()) + retention
