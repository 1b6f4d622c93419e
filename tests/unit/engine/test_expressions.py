"""DynamoDB's expression language as the local engine's tables evaluate it
(chronoq.local.engine.expressions): conditions and filters, updates, projections and key
conditions over typed values, with DynamoDB's semantics and refusals."""

from __future__ import annotations

from typing import Any

import pytest
from chronoq.local.engine import expressions as ex
from chronoq.local.engine.expressions import ExpressionError, InvalidExpression


def holds(
    text: str, item: dict[str, Any], values: dict[str, Any] | None = None, **names: str
) -> bool:
    """Does the condition ``text`` hold for ``item`` (names given as n_x="x" for #x)?"""
    given = {f"#{k.removeprefix('n_')}": v for k, v in names.items()}
    return ex.condition(text).test(item, given, values or {})


def updated(
    text: str, item: dict[str, Any], values: dict[str, Any] | None = None, **names: str
) -> dict[str, Any]:
    given = {f"#{k.removeprefix('n_')}": v for k, v in names.items()}
    new, _ = ex.update(text).apply(item, given, values or {})
    return new


def n(value: int | str) -> dict[str, str]:
    return {"N": str(value)}


def s(value: str) -> dict[str, str]:
    return {"S": value}


# --- conditions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a = :ten", True),
        ("a = :ten_point_zero", True),  # numbers compare as decimals
        ("a > :nine", True),  # not as text ("10" < "9")
        ("b < :later", True),
        ("b >= :later", False),
        ("a = :text_ten", False),  # different types are never equal
        ("a <> :text_ten", True),
        ("a < :text_ten", False),  # nor ordered
        ("a BETWEEN :nine AND :ten", True),
        ("a BETWEEN :ten_point_zero AND :nine", False),
        ("b IN (:later, :b)", True),
        ("b IN (:later)", False),
    ],
)
def test_given_typed_values_when_compared_then_numbers_compare_as_decimals_and_types_never_mix(
    text: str, expected: bool
) -> None:
    item = {"a": n(10), "b": s("b")}
    values = {
        ":ten": n(10),
        ":ten_point_zero": n("10.0"),
        ":nine": n(9),
        ":later": s("c"),
        ":b": s("b"),
        ":text_ten": s("10"),
    }

    assert holds(text, item, values) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("gone = :v", False),
        ("gone < :v", False),
        ("gone <> :v", True),
        ("NOT gone = :v", True),
        ("attribute_not_exists(gone)", True),
        ("attribute_exists(gone)", False),
        ("gone IN (:v)", False),
        ("gone BETWEEN :v AND :v", False),
    ],
)
def test_given_a_missing_attribute_when_a_condition_reads_it_then_only_absence_and_inequality_hold(
    text: str, expected: bool
) -> None:
    assert holds(text, {"a": n(1)}, {":v": n(1)}) is expected


def test_given_and_or_not_when_combined_then_not_binds_tighter_than_and_than_or() -> None:
    item = {"a": n(1)}
    values = {":one": n(1), ":two": n(2)}

    assert holds("a = :two AND a = :two OR a = :one", item, values)  # (F and F) or T
    assert not holds("a = :two AND (a = :two OR a = :one)", item, values)
    assert holds("NOT a = :two AND a = :one", item, values)  # (not F) and T
    assert not holds("NOT (a = :two OR a = :one)", item, values)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("contains(word, :sub)", True),
        ("contains(tags, :member)", True),
        ("contains(tags, :sub)", False),
        ("contains(nums, :one)", True),
        ("contains(elements, :member)", True),
        ("begins_with(word, :prefix)", True),
        ("begins_with(word, :sub)", False),
        ("begins_with(nums, :prefix)", False),
        ("attribute_type(word, :string)", True),
        ("attribute_type(tags, :string)", False),
        ("size(word) = :five", True),
        ("size(tags) < :five", True),
        ("size(nums) = :one", True),
        ("size(gone) = :one", False),
    ],
)
def test_given_functions_when_evaluated_then_they_answer_as_dynamodb(
    text: str, expected: bool
) -> None:
    item = {
        "word": s("hello"),
        "tags": {"SS": ["x", "y"]},
        "nums": {"NS": ["1.0"]},
        "elements": {"L": [s("x"), n(1)]},
    }
    values = {
        ":sub": s("ell"),
        ":member": s("x"),
        ":one": n(1),
        ":prefix": s("he"),
        ":string": s("S"),
        ":five": n(5),
    }

    assert holds(text, item, values) is expected


def test_given_an_unknown_type_name_when_attribute_type_is_evaluated_then_it_is_refused() -> None:
    with pytest.raises(ExpressionError, match="Invalid attribute type name"):
        holds("attribute_type(a, :t)", {"a": n(1)}, {":t": s("STRING")})


def test_given_nested_paths_when_read_then_maps_lists_and_name_placeholders_are_followed() -> None:
    item = {"doc": {"M": {"runs": {"L": [s("run_a"), s("run_b")]}, "x-y": n(7)}}}

    assert holds("doc.runs[1] = :v", item, {":v": s("run_b")})
    assert holds("doc.#odd = :seven", item, {":seven": n(7)}, n_odd="x-y")
    assert holds("attribute_not_exists(doc.runs[2])", item)
    assert holds("attribute_not_exists(doc.runs.x)", item)  # (a list has no members)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("status = :v", "reserved keyword; reserved keyword: status"),
        ("a = ", "Syntax error"),
        ("a = :v AND", "Syntax error"),
        ("a == :v", "Syntax error"),
        ("a", "Syntax error"),
        ("   ", "can not be empty"),
        ("a = :v)", "Syntax error"),
    ],
)
def test_given_a_malformed_condition_when_parsed_then_it_is_refused_with_dynamodbs_reason(
    text: str, message: str
) -> None:
    with pytest.raises(InvalidExpression, match=message):
        ex.condition(text)


def test_given_one_expression_text_when_parsed_twice_then_the_parse_is_reused() -> None:
    text = "attribute_not_exists(job_id) OR version = :expected"

    assert ex.condition(text) is ex.condition(text)
    assert ex.condition(text).names == frozenset()
    assert ex.condition(text).values == frozenset({":expected"})


def test_given_keywords_in_any_case_when_parsed_then_they_are_keywords() -> None:
    assert holds("a = :v and not b = :v or a between :v and :v", {"a": n(1)}, {":v": n(1)})


# --- updates ---------------------------------------------------------------------------------


def test_given_set_when_applied_then_arithmetic_if_not_exists_and_list_append_compute_new_values() -> (
    None
):
    item = {"tally": n(5), "logs": {"L": [s("one")]}}
    values = {":d": n(2), ":zero": n(0), ":none": {"L": []}, ":more": {"L": [s("two")]}}

    new = updated(
        "SET tally = tally + :d, spare = if_not_exists(spare, :zero) - :d, "
        "logs = list_append(if_not_exists(logs, :none), :more), "
        "fresh = list_append(if_not_exists(fresh, :none), :more)",
        item,
        values,
    )

    assert new == {
        "tally": n(7),
        "spare": n(-2),
        "logs": {"L": [s("one"), s("two")]},
        "fresh": {"L": [s("two")]},
    }
    assert item == {"tally": n(5), "logs": {"L": [s("one")]}}  # (the item read is untouched)


def test_given_several_set_actions_when_applied_then_every_operand_reads_the_item_as_it_was() -> (
    None
):
    new = updated("SET a = :v, b = a", {"a": n(1)}, {":v": n(2)})

    assert new == {"a": n(2), "b": n(1)}


def test_given_add_when_applied_then_numbers_are_added_and_set_members_joined() -> None:
    item = {"sum_of": n("1.5"), "tags": {"SS": ["x"]}}
    values = {":one": n(1), ":tags": {"SS": ["x", "y"]}, ":nums": {"NS": ["3"]}}

    new = updated("ADD sum_of :one, tags :tags, fresh :one, nums :nums", item, values)

    assert new == {
        "sum_of": n("2.5"),
        "tags": {"SS": ["x", "y"]},
        "fresh": n(1),
        "nums": {"NS": ["3"]},
    }


def test_given_delete_when_a_set_is_emptied_then_the_attribute_disappears() -> None:
    item = {"runs": {"SS": ["a", "b"]}}

    after_one = updated("DELETE runs :ids", item, {":ids": {"SS": ["a"]}})
    after_both = updated("DELETE runs :ids", item, {":ids": {"SS": ["a", "b"]}})
    after_missing = updated("DELETE spare :ids", item, {":ids": {"SS": ["a"]}})

    assert after_one == {"runs": {"SS": ["b"]}}
    assert after_both == {}
    assert after_missing == item


def test_given_remove_when_applied_then_attributes_members_and_list_elements_go() -> None:
    item = {
        "a": n(1),
        "holders": {"M": {"r1": n(1), "r2": n(2)}},
        "elements": {"L": [s("0"), s("1"), s("2")]},
    }

    new = updated("REMOVE a, holders.#run, elements[0], elements[2], absent", item, n_run="r1")

    assert new == {"holders": {"M": {"r2": n(2)}}, "elements": {"L": [s("1")]}}


def test_given_several_clauses_when_applied_then_each_is_applied() -> None:
    item = {"logs": {"L": []}, "log_bytes": n(10), "stale": n(1), "runs": {"SS": ["r"]}}

    new = updated(
        "SET logs = list_append(logs, :lines) ADD log_bytes :size REMOVE stale DELETE runs :r",
        item,
        {":lines": {"L": [s("x")]}, ":size": n(5), ":r": {"SS": ["r"]}},
    )

    assert new == {"logs": {"L": [s("x")]}, "log_bytes": n(15)}


def test_given_nested_set_when_applied_then_copies_are_changed_and_the_original_is_not() -> None:
    item = {"holders": {"M": {"r1": n(1)}}}

    new = updated("SET holders.#a = :v, holders.#b = :v", item, {":v": n(9)}, n_a="r2", n_b="r3")

    assert new == {"holders": {"M": {"r1": n(1), "r2": n(9), "r3": n(9)}}}
    assert item == {"holders": {"M": {"r1": n(1)}}}


def test_given_an_update_when_applied_then_the_paths_it_touched_are_told() -> None:
    _, touched = ex.update("SET a = :v, #h.x = :v REMOVE b").apply(
        {"h": {"M": {}}}, {"#h": "h"}, {":v": n(1)}
    )

    assert touched == [("a",), ("h", "x"), ("b",)]


@pytest.mark.parametrize(
    ("text", "item", "values", "message"),
    [
        ("SET a = :v, a = :w", {}, {":v": n(1), ":w": n(2)}, "overlap"),
        ("SET m.x = :v REMOVE m", {"m": {"M": {}}}, {":v": n(1)}, "overlap"),
        ("SET m.x = :v", {}, {":v": n(1)}, "document path provided in the update expression"),
        ("REMOVE m.x", {}, {}, "document path provided in the update expression"),
        ("SET a = b", {}, {}, "refers to an attribute that does not exist"),
        ("SET a = a + :v", {"a": s("x")}, {":v": n(1)}, "Incorrect operand type"),
        ("SET a = list_append(a, :v)", {"a": n(1)}, {":v": {"L": []}}, "Incorrect operand type"),
        ("ADD a :v", {"a": s("x")}, {":v": n(1)}, "incorrect data type"),
        ("ADD a :v", {}, {":v": s("x")}, "Incorrect operand type"),
        ("DELETE a :v", {"a": {"SS": ["x"]}}, {":v": {"NS": ["1"]}}, "incorrect data type"),
        ("SET job_id = :v", {}, {":v": s("x")}, "part of the key"),
    ],
)
def test_given_an_update_dynamodb_refuses_when_applied_then_it_is_refused_with_its_reason(
    text: str, item: dict[str, Any], values: dict[str, Any], message: str
) -> None:
    with pytest.raises(ExpressionError, match=message):
        ex.update(text).apply(item, {}, values, keys={"job_id"})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("SET a = :v SET b = :v", 'The "SET" section can only be used once'),
        ("SET status = :v", "reserved keyword"),
        ("PUT a = :v", "Syntax error"),
        ("ADD a b", "Syntax error"),
        ("SET a = :v,", "Syntax error"),
    ],
)
def test_given_a_malformed_update_when_parsed_then_it_is_refused(text: str, message: str) -> None:
    with pytest.raises(InvalidExpression, match=message):
        ex.update(text)


# --- projections and key conditions -----------------------------------------------------------


def test_given_a_projection_when_applied_then_only_its_paths_are_kept_in_their_structure() -> None:
    item: dict[str, Any] = {
        "a": n(1),
        "b": n(2),
        "doc": {"M": {"x": n(1), "y": n(2), "elements": {"L": [s("0"), s("1"), s("2")]}}},
    }

    top = ex.projection("a, #b, absent").apply(item, {"#b": "b"})
    nested = ex.projection("doc.x, doc.elements[2], doc.elements[0]").apply(item, {})

    assert top == {"a": n(1), "b": n(2)}
    assert nested == {"doc": {"M": {"x": n(1), "elements": {"L": [s("0"), s("2")]}}}}


def test_given_key_conditions_when_parsed_then_each_part_names_its_key_operator_and_values() -> (
    None
):
    between = ex.key_condition("job_id = :j AND run_id BETWEEN :low AND :high")
    prefix = ex.key_condition("#b = :b AND begins_with(due, :p)")
    flipped = ex.key_condition(":j = job_id AND :r < run_id")

    assert [(str(p.path), p.operator, p.values) for p in between.parts] == [
        ("job_id", "=", (":j",)),
        ("run_id", "BETWEEN", (":low", ":high")),
    ]
    assert [(str(p.path), p.operator) for p in prefix.parts] == [
        ("#b", "="),
        ("due", "begins_with"),
    ]
    assert [(str(p.path), p.operator) for p in flipped.parts] == [("job_id", "="), ("run_id", ">")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a = :a OR b = :b", "Invalid operator used in KeyConditionExpression: OR"),
        ("a = :a AND b = :b AND c = :c", "too many conditions"),
        ("a = :a AND contains(b, :b)", "not supported"),
        ("a.b = :a", "nested path"),
    ],
)
def test_given_a_key_condition_dynamodb_refuses_when_parsed_then_it_is_refused(
    text: str, message: str
) -> None:
    with pytest.raises(InvalidExpression, match=message):
        ex.key_condition(text)


# --- placeholders ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("names", "values", "message"),
    [
        ({}, {":v": n(1)}, "ExpressionAttributeNames must not be empty"),
        ({"#n": "a"}, {}, "ExpressionAttributeValues must not be empty"),
        (
            None,
            {":v": n(1)},
            "attribute name used in the document path is not defined; attribute name: #n",
        ),
        (
            {"#n": "a"},
            None,
            "attribute value used in expression is not defined; attribute value: :v",
        ),
        (
            {"#n": "a", "#o": "b"},
            {":v": n(1)},
            r"ExpressionAttributeNames unused in expressions: keys: \{#o\}",
        ),
        (
            {"#n": "a"},
            {":v": n(1), ":w": n(2)},
            r"ExpressionAttributeValues unused in expressions: keys: \{:w\}",
        ),
    ],
)
def test_given_placeholders_when_checked_then_undefined_and_unused_ones_are_refused(
    names: dict[str, str] | None, values: dict[str, Any] | None, message: str
) -> None:
    with pytest.raises(ExpressionError, match=message):
        ex.check_placeholders(names, values, frozenset({"#n"}), frozenset({":v"}))
