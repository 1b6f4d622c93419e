"""A burst of runs due in one second reaches the workers priority by priority, end to end, on
an in-process chronoq local whose clock the test holds at each priority's instant (see
test_over_minutes.py; a module of its own: one chronoq local runs in a process at a time)."""

from __future__ import annotations

from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

from tests.e2e.harness import ENDED, ClockedLocal, Jobs, minute_of, parse, poll, start_clocked_local
from tests.support import Sink

#: Longest real wait for what the clock's passing should bring about.
PATIENCE = 120.0

#: Runs of each priority in the burst (how many a worker takes at once is make bench's
#: subject: ``bench.lag`` starts a hundred in one second).
PER_PRIORITY = 20


def test_given_a_burst_of_runs_due_in_one_second_when_their_minute_is_dispatched_then_each_priority_reaches_the_workers_in_turn_and_each_runs_once(
    tmp_path: Path, sink: Sink
) -> None:
    """High-priority runs reach a worker two seconds before their second, normal ones one
    second before, low ones in the second after: with the clock held at each of those
    instants (and at the second itself, while the high and normal runs run), only the
    priorities due by then have left their queues (taken by workers, whose executions wait
    for their second), whatever the load on the machine. (On a chronoq local of its own:
    its queues hold nothing else.)"""
    with start_clocked_local(tmp_path) as local:
        _burst(local, Jobs(local), sink)


def _burst(local: ClockedLocal, jobs: Jobs, sink: Sink) -> None:
    # (a minute the dispatcher has not opened yet, its window being 65 s: a run created in
    # an opened minute is sent by the API, and may be sent again by a tick opening it
    # meanwhile, a duplicate the worker drops but the queue counts below would not expect)
    at = minute_of(local.now()) + timedelta(minutes=3)
    priorities = {}
    for priority in ("high", "normal", "low"):
        for i in range(PER_PRIORITY):
            job = jobs.create(
                {
                    "name": f"burst-{priority}-{i}",
                    "priority": priority,
                    "schedule": {"type": "at", "at": at.isoformat()},
                    "target": {"type": "http", "url": f"{sink.url}/burst"},
                }
            )
            priorities[job["id"]] = priority
    sqs = local.aws_client("sqs")

    def counts(priority: str) -> tuple[int, int]:
        """(delayed, visible or being handled) on the priority's queue."""
        attributes = sqs.get_queue_attributes(
            QueueUrl=local.queue_url(priority), AttributeNames=["All"]
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessagesDelayed"]), int(
            attributes["ApproximateNumberOfMessages"]
        ) + int(attributes["ApproximateNumberOfMessagesNotVisible"])

    def taken(priority: str) -> bool:
        return counts(priority) == (0, 0)

    local.jump_to(at - timedelta(seconds=65))  # the dispatcher sends the minute (held clock)
    poll(
        lambda: all(counts(p) == (PER_PRIORITY, 0) for p in ("high", "normal", "low")),
        PATIENCE,
        lambda: f"the burst on its queues: {[counts(p) for p in ('high', 'normal', 'low')]}",
    )
    for reached, lead in (("high", 2), ("normal", 1)):
        local.jump_to(at - timedelta(seconds=lead) + timedelta(milliseconds=200))
        poll(partial(taken, reached), PATIENCE, f"the {reached} runs taken")
        assert counts("low") == (PER_PRIORITY, 0)  # still held back
    assert counts("normal") == (0, 0)
    assert sink.hits_to("/burst") == []  # taken, waiting for their second
    local.jump_to(at)  # their second: they start, the clock held there
    poll(
        lambda: len(sink.hits_to("/burst")) >= 2 * PER_PRIORITY,
        PATIENCE,
        lambda: f"the high and normal runs calling their target: {len(sink.hits_to('/burst'))}",
    )
    assert counts("low") == (PER_PRIORITY, 0)  # held back until the second after

    def all_ended() -> list[dict[str, Any]] | None:
        ended = [r for job_id in priorities for r in local.runs(job_id) if r["status"] in ENDED]
        return ended if len(ended) == len(priorities) else None

    # (time passes: the low runs too; the sink's count first, as reading every job's runs
    # takes the API a second or more)
    local.run_until(
        lambda: len(sink.hits_to("/burst")) >= len(priorities),
        PATIENCE,
        lambda: f"every run of the burst calling its target: {len(sink.hits_to('/burst'))}",
    )
    runs = local.run_until(all_ended, PATIENCE, "every run of the burst ending")
    assert {r["status"] for r in runs} == {"SUCCEEDED"}
    assert {parse(r["scheduled_at"]) for r in runs} == {at}
    for run in runs:
        started = parse(run["started_at"])
        assert started >= at  # none before its second
        if priorities[run["job_id"]] == "low":  # reached a worker only after its second
            assert started >= at + timedelta(seconds=1)
    called = [h.headers["X-Chronoq-Run-Id"] for h in sink.hits_to("/burst")]
    assert sorted(called) == sorted(r["id"] for r in runs)  # each called its target once
