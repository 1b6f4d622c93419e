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
