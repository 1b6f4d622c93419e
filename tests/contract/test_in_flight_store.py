"""The store's side of an owner's runs in flight (chronoq.domain.inflight), on the fakes, moto
and the engine: a take is refused whole when it would go over the limit, gives back lower the
same buckets, a give-back never makes an item, and healing takes out only what it read."""

from __future__ import annotations

from datetime import timedelta

from chronoq.domain import inflight
from chronoq.domain.inflight import InFlight

from tests.contract.backends import NOW, Backend

KEY = inflight.item_key("alice")
SOON = inflight.end_bucket(NOW, 60)
LATER = inflight.end_bucket(NOW, 7200)


def test_given_no_count_when_read_then_it_is_empty_and_a_give_back_makes_no_item(
    backend: Backend,
) -> None:
    store = backend.store
    assert store.get_in_flight(KEY) == InFlight()

    assert store.give_in_flight(KEY, {SOON: 1}) == InFlight()
    assert store.get_in_flight(KEY) == InFlight()


def test_given_a_count_when_runs_are_taken_within_the_limit_then_each_bucket_counts_them(
    backend: Backend,
) -> None:
    store = backend.store

    first = store.take_in_flight(KEY, {SOON: 2, LATER: 1}, 5, NOW)
    second = store.take_in_flight(KEY, {SOON: 2}, 5, NOW)

    assert first == InFlight(3, {SOON: 2, LATER: 1})
    assert second == InFlight(5, {SOON: 4, LATER: 1})
    assert store.get_in_flight(KEY) == second
    assert store.get_in_flight(inflight.item_key("bob")) == InFlight()


def test_given_a_count_near_its_limit_when_more_are_taken_than_fit_then_none_is_and_it_is_unchanged(
    backend: Backend,
) -> None:
    store = backend.store
    store.take_in_flight(KEY, {SOON: 4}, 5, NOW)

    assert store.take_in_flight(KEY, {SOON: 1, LATER: 1}, 5, NOW) is None

    assert store.get_in_flight(KEY) == InFlight(4, {SOON: 4})
    assert store.take_in_flight(KEY, {LATER: 1}, 5, NOW) == InFlight(5, {SOON: 4, LATER: 1})


def test_given_counted_runs_when_they_end_then_each_is_taken_out_of_its_bucket_and_the_total(
    backend: Backend,
) -> None:
    store = backend.store
    store.take_in_flight(KEY, {SOON: 3, LATER: 1}, 10, NOW)

    after = store.give_in_flight(KEY, {SOON: 2, LATER: 1})

    assert after == InFlight(1, {SOON: 1, LATER: 0})
    assert store.get_in_flight(KEY) == after


def test_given_an_expired_bucket_when_healed_then_it_leaves_the_total_unless_it_changed_meanwhile(
    backend: Backend,
) -> None:
    store = backend.store
    store.take_in_flight(KEY, {SOON: 3, LATER: 2}, 10, NOW)
    later = NOW + timedelta(seconds=60 + 60 + inflight.BUCKET_GRACE_SECONDS + 1)
    expired = store.get_in_flight(KEY).expired(later)
    assert expired == {SOON: 3}

    store.give_in_flight(KEY, {SOON: 1})  # a change since it was read: not healed
    store.heal_in_flight(KEY, expired)
    assert store.get_in_flight(KEY) == InFlight(4, {SOON: 2, LATER: 2})

    store.heal_in_flight(KEY, store.get_in_flight(KEY).expired(later))
    assert store.get_in_flight(KEY) == InFlight(2, {LATER: 2})
    assert store.get_in_flight(KEY).live(later) == 2


def test_given_a_count_when_a_run_is_parked_on_it_then_the_note_stays_until_cleared_as_read(
    backend: Backend,
) -> None:
    store = backend.store
    store.mark_in_flight_parked(KEY, NOW)  # no count yet: nothing to note on
    assert store.get_in_flight(KEY) == InFlight()
    store.take_in_flight(KEY, {SOON: 1}, 5, NOW)

    store.mark_in_flight_parked(KEY, NOW)
    noted = store.get_in_flight(KEY).parked_at
    store.clear_in_flight_parked(KEY, noted - 1)  # parked again since what was read: kept
    kept = store.get_in_flight(KEY)
    store.clear_in_flight_parked(KEY, noted)

    assert noted == int(NOW.timestamp())
    assert kept.parked_at == noted
    assert store.get_in_flight(KEY) == InFlight(1, {SOON: 1})
    assert store.give_in_flight(KEY, {SOON: 1}).parked_at == 0
