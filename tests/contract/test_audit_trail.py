"""The AuditTrail port: jobs' audit trails, only ever added to, on every backend (the fakes,
the DynamoDB adapter on moto, and on chronoq local's engine)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from chronoq.domain.audit import Action, AuditEntry, Change, Source
from chronoq.usecases.ports import EntryExists

from tests.contract.backends import NOW, Backend


def an_entry(job_id: str = "job_a", owner: str = "alice", ms: int = 0, **extra: Any) -> AuditEntry:
    fields: dict[str, Any] = {
        "job_id": job_id,
        "owner": owner,
        "at": NOW + timedelta(milliseconds=ms),
        "request_id": f"req-{ms}",
        "action": Action.CHANGE,
        "by": owner,
        "by_name": f"{owner} liddell",
        "source": Source.CLI,
        "changes": [Change(field="schedule.expression", before="* * * * *", after="0 2 * * *")],
        **extra,
    }
    return AuditEntry.model_validate(fields)


def test_given_entries_appended_when_paged_then_newest_first_as_kept(backend: Backend) -> None:
    trail = backend.audit
    created = an_entry(
        ms=0,
        action=Action.CREATE,
        by_name=None,
        source=Source.API,
        changes=[Change(field="name", after="nightly: ünïcode ✓"), Change(field="notify")],
    )
    triggered = an_entry(ms=1500, action=Action.TRIGGER, changes=[], detail={"run_id": "r1"})
    changed = an_entry(ms=61_000)
    for entry in (triggered, created, changed):  # (in any order)
        trail.append(entry)

    page = trail.page("job_a", "alice", limit=10)

    assert page.items == [changed, triggered, created]
    assert page.after is None


def test_given_many_entries_when_paged_then_each_once_in_order_across_pages(
    backend: Backend,
) -> None:
    trail = backend.audit
    kept = [an_entry(ms=n * 10) for n in range(7)]
    for entry in kept:
        trail.append(entry)
    trail.append(an_entry(job_id="job_b", ms=5))  # (another job's)

    seen: list[AuditEntry] = []
    after = None
    for _ in range(10):
        page = trail.page("job_a", "alice", limit=3, after=after)
        assert len(page.items) <= 3
        seen += page.items
        after = page.after
        if after is None:
            break

    assert seen == kept[::-1]


def test_given_two_requests_in_one_millisecond_when_appended_then_both_are_kept(
    backend: Backend,
) -> None:
    trail = backend.audit
    first, second = an_entry(request_id="req-a"), an_entry(request_id="req-b")
    trail.append(first)
    trail.append(second)

    assert {e.request_id for e in trail.page("job_a", "alice", limit=10).items} == {
        "req-a",
        "req-b",
    }


def test_given_alices_trail_when_bob_pages_it_then_he_reads_nothing(backend: Backend) -> None:
    trail = backend.audit
    trail.append(an_entry(ms=0))
    trail.append(an_entry(ms=1))
    trail.append(an_entry(job_id="job_b", owner="bob", ms=2))

    assert trail.page("job_a", "bob", limit=10).items == []
    assert trail.page("job_a", "bob", limit=1).after is None
    assert [e.owner for e in trail.page("job_b", "bob", limit=10).items] == ["bob"]
    assert trail.page("job_b", "alice", limit=10).items == []


def test_given_an_entry_when_one_with_its_key_is_appended_then_refused_and_the_first_kept(
    backend: Backend,
) -> None:
    trail = backend.audit
    first = an_entry()
    trail.append(first)
    forged = an_entry(action=Action.DELETE, changes=[Change(field="state", before="ACTIVE")])
    assert forged.key == first.key

    # DynamoDB refuses a PartiQL INSERT of a key that exists (DuplicateItemException). On
    # "engine" and "fake" the refusal is their own. On "moto" it is the one
    # chronoq.local.emulation.dynamodb gives moto: moto 5.2.5 alone takes no ``?`` parameter
    # in an INSERT and would write over the item.
    with pytest.raises(EntryExists):
        trail.append(forged)

    assert trail.page("job_a", "alice", limit=10).items == [first], backend.name
