"""The CalendarStore port: each owner's business calendars, and which jobs use each, on every
backend (the fakes, the DynamoDB adapter on moto, and on chronoq local's engine)."""

from __future__ import annotations

from datetime import date, timedelta

from chronoq.domain.calendars import CalendarMeta, CalendarRules

from tests.contract.backends import NOW, Backend

RULES = CalendarRules(
    dates=(date(2026, 12, 25),),
    ranges=((date(2026, 12, 24), date(2026, 12, 31)),),
    timezone="America/New_York",
)


def meta(name: str, version: int = 1, rules: CalendarRules = RULES) -> CalendarMeta:
    return CalendarMeta(
        name=name,
        rules=rules,
        version=version,
        created_at=NOW,
        updated_at=NOW + timedelta(minutes=version),
    )


def test_given_calendars_put_when_read_then_each_owner_sees_its_own_by_name_with_its_rules(
    backend: Backend,
) -> None:
    store = backend.store
    assert store.put_calendar("alice", meta("us"), limit=5)
    assert store.put_calendar("alice", meta("eu", rules=CalendarRules()), limit=5)
    assert store.put_calendar("bob", meta("us", rules=CalendarRules(timezone="UTC")), limit=5)

    alice = store.get_calendars("alice", consistent=True)
    assert list(alice) == ["eu", "us"]
    assert alice["us"] == meta("us")
    assert store.get_calendars("bob")["us"].rules.timezone == "UTC"
    assert store.get_calendars("carol") == {}


def test_given_a_calendar_when_versions_are_put_then_only_the_next_one_is_kept(
    backend: Backend,
) -> None:
    store = backend.store
    assert store.put_calendar("alice", meta("us"), limit=5)
    assert not store.put_calendar("alice", meta("us"), limit=5)  # (made meanwhile)
    assert not store.put_calendar("alice", meta("us", 3), limit=5)  # (not the next)
    changed = meta("us", 2, rules=CalendarRules(dates=(date(2027, 1, 1),)))
    assert store.put_calendar("alice", changed, limit=5)
    assert not store.put_calendar("alice", meta("us", 2), limit=5)  # (lost to the other)
    assert store.get_calendars("alice", consistent=True)["us"] == changed


def test_given_an_owner_at_its_limit_when_a_new_calendar_is_put_then_refused_but_a_change_is_not(
    backend: Backend,
) -> None:
    store = backend.store
    assert store.put_calendar("alice", meta("a"), limit=2)
    assert store.put_calendar("alice", meta("b"), limit=2)

    assert not store.put_calendar("alice", meta("c"), limit=2)
    assert store.put_calendar("alice", meta("b", 2), limit=2)
    assert store.put_calendar("bob", meta("c"), limit=2)  # (per owner)


def test_given_a_calendar_in_use_when_removed_then_refused_naming_the_jobs_until_they_let_go(
    backend: Backend,
) -> None:
    store = backend.store
    store.put_calendar("alice", meta("us"), limit=5)
    assert store.use_calendar("alice", "job_b", "us")
    assert store.use_calendar("alice", "job_a", "us")
    assert not store.use_calendar("alice", "job_c", "nope")
    assert not store.use_calendar("bob", "job_c", "us")  # (another owner's)

    assert store.remove_calendar("alice", "us") == ["job_a", "job_b"]
    assert "us" in store.get_calendars("alice", consistent=True)
    store.unuse_calendar("alice", "job_a", "us")
    store.unuse_calendar("alice", "job_b", "us")
    store.unuse_calendar("alice", "job_b", "us")  # (idempotent)

    assert store.calendar_users("alice", "us") == []
    assert store.remove_calendar("alice", "us") == []
    assert store.get_calendars("alice", consistent=True) == {}
    assert store.remove_calendar("alice", "us") == []  # (not there: nothing)
    assert not store.use_calendar("alice", "job_a", "us")
