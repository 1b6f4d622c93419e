"""An audit entry's parts (chronoq.domain.audit): who and from what, its key's order, and the
fields of a change, masked and capped."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from chronoq.domain import audit
from chronoq.domain import limits as lim
from chronoq.domain.audit import Caller, Change, Source


@pytest.mark.parametrize(
    ("agent", "source"),
    [
        ("chronoq-cli/1.4.0 (Python 3.11)", Source.CLI),
        ("chronoq-apply/1.4.0", Source.APPLY),
        ("chronoq-console/1.4.0", Source.CONSOLE),
        ("Mozilla/5.0 (Macintosh) Safari/605.1.15", Source.CONSOLE),
        ("chronoq-clipper/2", Source.API),
        ("python-requests/2.32", Source.API),
        (None, Source.API),
    ],
)
def test_given_a_user_agent_when_read_then_it_tells_the_client(
    agent: str | None, source: Source
) -> None:
    assert audit.source_of(agent) is source


def test_given_a_clients_user_agent_when_made_then_it_is_read_back_as_that_client() -> None:
    for source in (Source.CLI, Source.APPLY, Source.CONSOLE):
        assert audit.source_of(audit.user_agent(source, "9.9")) is source


@pytest.mark.parametrize(
    ("claims", "name"),
    [
        ({"sub": "u-1", "cognito:username": "alice", "email": "a@example.com"}, "alice"),
        ({"sub": "u-1", "username": "alice"}, "alice"),
        ({"sub": "u-1", "email": "a@example.com"}, "a@example.com"),
        ({"sub": "u-1"}, None),
    ],
)
def test_given_a_tokens_claims_when_read_then_the_caller_is_its_subject_and_name(
    claims: dict[str, str], name: str | None
) -> None:
    caller = Caller.of(claims, "chronoq-cli/1", "req-1")

    assert (caller.subject, caller.name, caller.source, caller.request_id) == (
        "u-1",
        name,
        Source.CLI,
        "req-1",
    )


def test_given_instants_with_and_without_milliseconds_when_keyed_then_keys_sort_in_time_order() -> (
    None
):
    start = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)
    instants = [start + timedelta(milliseconds=ms) for ms in (0, 5, 999, 1000, 61_000)]

    keys = [audit.entry_key(at, "z") for at in instants]

    assert sorted(keys) == keys
    assert keys[0] == "2026-11-26T12:00:00.000Z#z"


def test_given_two_documents_when_compared_then_only_the_fields_that_differ_are_listed() -> None:
    before = {"name": "a", "retry": {"max_attempts": 1, "backoff_rate": 2.0}, "labels": {}}
    after = {"name": "a", "retry": {"max_attempts": 3, "backoff_rate": 2.0}, "labels": {"k": "v"}}

    assert audit.changes(before, after) == [
        Change(field="labels.k", before=None, after="v"),
        Change(field="retry.max_attempts", before=1, after=3),
    ]


def test_given_a_deep_value_when_compared_then_it_is_kept_whole_below_three_levels() -> None:
    before = {"target": {"args": {"a": {"b": 1}}}}
    after = {"target": {"args": {"a": {"b": 2}}}}

    assert audit.changes(before, after) == [
        Change(field="target.args.a", before={"b": 1}, after={"b": 2})
    ]


def test_given_more_fields_changed_than_an_entry_lists_when_compared_then_the_last_says_how_many() -> (
    None
):
    after = {f"f{n:03d}": n for n in range(lim.MAX_AUDIT_CHANGES + 10)}

    found = audit.changes(None, after)

    assert len(found) == lim.MAX_AUDIT_CHANGES
    assert found[-1] == Change(field=audit.MORE, after="11 more fields")


@pytest.mark.parametrize(
    ("name", "value", "kept"),
    [
        ("Authorization", "Bearer abc", "***"),
        ("Cookie", "session=1", "***"),
        ("X-Anything", "AKIAABCDEFGHIJKLMNOP", "***"),
        ("body", '{"k": "sk-' + "x" * 40 + '"}', "***"),
        ("Authorization", "Bearer {{ secret.crm }}", "Bearer {{ secret.crm }}"),
        ("Authorization", {"secret": "crm"}, {"secret": "crm"}),
        ("X-Tenant", "acme", "acme"),
        (
            "args",
            {"deep": ["ok", {"authorization": "plain"}]},
            {"deep": ["ok", {"authorization": "***"}]},
        ),
        ("retries", 3, 3),
    ],
)
def test_given_a_value_when_kept_then_what_looks_like_a_credential_is_masked(
    name: str, value: object, kept: object
) -> None:
    assert audit.kept(f"target.headers.{name}", value) == kept


def test_given_a_long_credential_when_kept_then_it_is_masked_before_it_is_cut() -> None:
    value = "x" * 1000 + " ghp_" + "a" * 40

    assert audit.kept("target.body", value) == "***"
    assert audit.kept("target.body", "x" * 1000).endswith("... (1002 characters)")
