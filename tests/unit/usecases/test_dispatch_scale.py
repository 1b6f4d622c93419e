"""The dispatcher at scale, on the fakes: a minute too large for one invocation is finished
by several, each resuming where the last stopped (its time ran out, or it crashed), and
every run is dispatched exactly once, before its second."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import datetime, timedelta

import pytest
from chronoq import resources as r
from chronoq.domain.runs import Priority, RunMessage
from chronoq.fakes import FakeClock, FakeQueues, FakeStore
from chronoq.usecases.dispatch import Dispatcher
from chronoq.usecases.timeindex import TimeIndex

from bench.dispatch import MINUTE, TICK, due_minute

#: A minute of runs several pages long on every shard (DISPATCH_PAGE_ITEMS made small for
#: the test: the same pages as a minute of 100,000 runs, a fifth of the items; how many runs
#: a process dispatches per second is make bench's to measure).
RUNS = 20_000
SHARDS = 32
PAGE_ITEMS = 200


class CrashingQueues(FakeQueues):
    """Fails one send (the invocation dies with it), after ``after`` good ones."""

    def __init__(self, after: int) -> None:
        super().__init__()
        self.after = after

    def send(self, messages: Iterable[tuple[Priority, RunMessage]], now: datetime) -> int:
        if self.after == 0:
            self.after = -1
            raise ConnectionError("the invocation dies here")
        self.after -= 1
        return super().send(messages, now)


class Budget:
    """An invocation's time, shared by its shards' threads: plenty for ``pages`` looks at
    the clock (one per minute begun and per page), then too little."""

    def __init__(self, pages: int) -> None:
        self.pages = pages

    def __call__(self) -> float:
        self.pages -= 1
        return 60.0 if self.pages >= 0 else r.DISPATCH_STOP_SECONDS / 2


def test_given_a_minute_of_many_pages_of_runs_when_invocations_carry_part_of_it_and_one_crashes_then_each_run_is_dispatched_once_before_its_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(r, "DISPATCH_PAGE_ITEMS", PAGE_ITEMS)
    clock = FakeClock(MINUTE)
    store = FakeStore()
    expected = due_minute(store, SHARDS, RUNS, clock)
    queues = CrashingQueues(after=40)
    dispatcher = Dispatcher(store, TimeIndex(store, queues, SHARDS, clock), SHARDS, clock)
    clock.now = TICK - timedelta(minutes=1)
    dispatcher.dispatch()  # the minutes before (checkpoints exist, as in a deployment)
    clock.now = TICK

    invocations = crashes = stopped = 0
    while True:
        invocations += 1
        try:
            report = dispatcher.dispatch(time_left=Budget(pages=40))
        except ConnectionError:
            crashes += 1
            continue
        if not report.unfinished:
            break
        stopped += 1
        assert invocations < 100

    sent = Counter(s.message.run_id for s in queues.sent)
    assert crashes == 1
    assert stopped >= 1  # an invocation ran out of time partway into the minute
    assert len(sent) == RUNS
    assert set(sent) == set(expected)
    assert max(sent.values()) == 1  # none twice
    for s in queues.sent:  # each held on its queue until just before its second
        assert s.message.scheduled_at > clock.now
        lead = r.DISPATCH_LEAD_SECONDS[s.priority.value]
        visible = (clock.now - s.message.scheduled_at).total_seconds() + s.delay_seconds
        assert -lead - 1 < visible <= -lead
    assert store.checkpoints(SHARDS) == dict.fromkeys(range(SHARDS), MINUTE)


@pytest.mark.parametrize("shards", [[0], [1, 3]])
def test_given_a_group_of_shards_when_dispatched_then_only_its_shards_move_on(
    shards: list[int],
) -> None:
    clock = FakeClock(MINUTE)
    store, queues = FakeStore(), FakeQueues()
    due_minute(store, 4, 400, clock)
    dispatcher = Dispatcher(store, TimeIndex(store, queues, 4, clock), 4, clock)
    clock.now = TICK

    report = dispatcher.dispatch(shards)

    assert set(report.per_shard) == set(shards)
    assert report.dispatched == len(queues.sent) == sum(report.per_shard.values()) > 0
    moved = {s for s, minute in store.checkpoints(4).items() if minute == MINUTE}
    assert moved == set(shards)
