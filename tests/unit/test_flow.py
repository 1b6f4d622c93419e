"""Flow control's rules (chronoq.domain.flow): who may start, in which second."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
from chronoq.domain import flow
from chronoq.domain import limits as lim
from chronoq.domain.flow import Candidate, FlowState, Limits, admit
from chronoq.domain.jobs import Flow
from pydantic import ValidationError

NOW = 1_000_000


def test_given_max_running_when_more_runs_ask_than_it_allows_then_the_first_get_slots_and_the_others_wait() -> (
    None
):
    asks = [Candidate(f"r{i}", NOW + 1) for i in range(4)]

    after, decided = admit(FlowState(), Limits(max_running=2), asks, NOW)

    assert decided == {"r0": NOW + 1, "r1": NOW + 1, "r2": None, "r3": None}
    assert dict(after.holders) == {"r0": NOW + 1, "r1": NOW + 1}


def test_given_a_full_flow_when_a_slot_is_given_back_then_the_next_run_gets_it() -> None:
    full = FlowState(holders={"r0": NOW - 5, "r1": NOW - 5}, version=3)

    _, waiting = admit(full, Limits(max_running=2), [Candidate("r2", NOW + 1)], NOW)
    released = FlowState(holders={"r1": NOW - 5}, version=3)
    after, decided = admit(released, Limits(max_running=2), [Candidate("r2", NOW + 1)], NOW)

    assert waiting == {"r2": None}
    assert decided == {"r2": NOW + 1}
    assert set(after.holders) == {"r1", "r2"}
    assert after.version == 3  # (the store writes the next one)


def test_given_max_running_alone_when_a_due_run_asks_then_it_starts_in_the_current_second() -> None:
    _, decided = admit(FlowState(), Limits(max_running=2), [Candidate("late", NOW - 3)], NOW)

    # (no start is counted per second: nothing to wait for, a run that is due starts now)
    assert decided == {"late": NOW}


def test_given_a_rate_when_a_due_run_asks_then_it_starts_in_the_next_second_it_is_counted_in() -> (
    None
):
    _, decided = admit(
        FlowState(),
        Limits(max_running=2, max_starts_per_second=3),
        [Candidate("late", NOW - 3)],
        NOW,
    )

    assert decided == {"late": NOW + 1}


def test_given_a_rate_when_a_burst_asks_then_no_second_holds_more_starts_than_the_rate_and_each_knows_its_second() -> (
    None
):
    asks = [Candidate(f"r{i}", NOW + 1) for i in range(7)]

    after, decided = admit(FlowState(), Limits(max_starts_per_second=3), asks, NOW)

    per_second = Counter(decided.values())
    assert per_second == {NOW + 1: 3, NOW + 2: 3, NOW + 3: 1}
    seconds = [decided[f"r{i}"] or 0 for i in range(7)]
    assert seconds == sorted(seconds)  # in the order asked
    assert (after.frontier, after.starts) == (NOW + 3, 1)
    assert dict(after.holders) == {}  # a rate alone holds no slots


def test_given_seconds_already_counted_when_more_runs_ask_later_then_the_count_goes_on_from_the_frontier() -> (
    None
):
    counted = FlowState(frontier=NOW + 2, starts=3)

    _, decided = admit(counted, Limits(max_starts_per_second=3), [Candidate("a", NOW + 1)], NOW)

    assert decided == {"a": NOW + 3}


def test_given_a_run_that_wants_a_later_second_when_it_asks_then_it_gets_that_second() -> None:
    _, decided = admit(
        FlowState(frontier=NOW + 1, starts=3),
        Limits(max_starts_per_second=3),
        [Candidate("a", NOW + 30)],
        NOW,
    )

    assert decided == {"a": NOW + 30}


def test_given_a_second_reserved_before_when_the_run_asks_again_in_time_then_it_keeps_it_uncounted() -> (
    None
):
    state = FlowState(holders={"a": NOW + 5}, frontier=NOW + 5, starts=2)
    limits = Limits(max_running=1, max_starts_per_second=2)

    after, decided = admit(state, limits, [Candidate("a", NOW + 1, reserved=NOW + 5)], NOW)

    assert decided == {"a": NOW + 5}
    assert after == replace(state, max_running=1)  # nothing counted twice, nothing to write


def test_given_a_second_reserved_before_that_has_passed_when_the_run_asks_again_then_it_is_counted_anew() -> (
    None
):
    state = FlowState(holders={"a": NOW - 10}, frontier=NOW - 10, starts=2)
    limits = Limits(max_running=1, max_starts_per_second=2)

    after, decided = admit(state, limits, [Candidate("a", NOW, reserved=NOW - 10)], NOW)

    assert decided == {"a": NOW + 1}  # still its slot (it holds it), a new second
    assert dict(after.holders) == {"a": NOW + 1}
    assert (after.frontier, after.starts) == (NOW + 1, 1)


def test_given_a_holder_that_never_started_when_the_flow_is_full_then_its_slot_is_taken_back() -> (
    None
):
    old = NOW - lim.FLOW_LEASE_SECONDS - 1
    state = FlowState(holders={"dead": old, "alive": NOW - 5})

    assert flow.stale_holders(state, NOW) == ["dead"]
    after, decided = admit(state, Limits(max_running=2), [Candidate("new", NOW + 1)], NOW, ["dead"])

    assert decided == {"new": NOW + 1}
    assert set(after.holders) == {"alive", "new"}


def test_given_owners_and_keys_when_their_items_are_named_then_only_the_same_owner_and_key_share_one() -> (
    None
):
    assert flow.item_key("alice", "api") == flow.item_key("alice", "api")
    assert flow.item_key("alice", "api") != flow.item_key("bob", "api")
    assert flow.item_key("alice", "api") != flow.item_key("alice", "other")
    assert flow.backfill_item_key("alice", "bf1") != flow.item_key("alice", "bf1")
    assert flow.item_key("alice", "api").startswith("flow#")
    assert "alice" not in flow.item_key("alice", "api")


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({"key": "api"}, "flow"),
        ({"key": "", "max_running": 1}, "key"),
        ({"key": "a b", "max_running": 1}, "key"),
        ({"key": "api", "max_running": 0}, "max_running"),
        ({"key": "api", "max_running": lim.MAX_FLOW_RUNNING + 1}, "max_running"),
        ({"key": "api", "max_starts_per_second": True}, "max_starts_per_second"),
    ],
)
def test_given_a_bad_flow_when_validated_then_it_is_refused_naming_the_field(
    document: dict[str, object], field: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        Flow.model_validate(document)
    assert field in str(refused.value) or "needs max_running" in str(refused.value)
