"""Flow control holds, whatever happens: the reliability state machine
(tests/unit/test_reliability_properties.py: users, ticks, dispatches that crash halfway,
deliveries duplicated, reordered and late, workers that die after claiming or after
starting, runs that end, cancels), with jobs that share flow keys, created alone and in
bursts due in the same second, checked after every step:

- at no moment do more runs of a flow key execute than its ``max_running``;
- no second holds more starts of a flow key than its ``max_starts_per_second``;
- and, as before, no run executes twice, nothing a change removed starts, and every fire time
  announced ends in exactly one final status: a run over a limit waits, it is not dropped.
"""

from __future__ import annotations

import os
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from chronoq.domain.runs import RunStatus
from chronoq.execution.contract import ExecutionInput
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from tests.builders import OWNER, job_spec
from tests.unit.test_reliability_properties import (
    SCHEDULES,
    RecordingStore,
    Reliability,
    StepFunctions,
    schedule,
)

#: The flows the jobs share: key -> (max_running, max_starts_per_second).
FLOWS: dict[str, tuple[int | None, int | None]] = {
    "one-at-a-time": (1, None),
    "two-a-second": (None, 2),
    "both": (2, 1),
}


class FlowStepFunctions(StepFunctions):
    """The executions, noting which runs execute (from MarkRunning to their end) and in
    which second each began (an execution waits for its ``starts_at``)."""

    def __init__(self, store: RecordingStore, clock: Any) -> None:
        super().__init__(store, clock)
        #: the runs executing now (past MarkRunning, not ended)
        self.running_now: set[str] = set()
        self.began: dict[str, datetime] = {}

    def begin(self, run_id: str, execution_input: ExecutionInput) -> bool:
        past = super().begin(run_id, execution_input)
        if past:  # past MarkRunning: it executes
            self.running_now.add(run_id)
            starts = datetime.fromisoformat(execution_input.starts_at)
            self.began[run_id] = max(self.clock(), starts).replace(microsecond=0)
        return past

    def finish_all(self, status: RunStatus = RunStatus.SUCCEEDED) -> None:
        super().finish_all(status)
        self.running_now -= self.finished

    def stop(self, run_id: str, reason: str) -> bool:
        stopped = super().stop(run_id, reason)
        if run_id in self.stopped:  # a STANDARD execution, stopped: its attempt with it
            self.running_now.discard(run_id)
        return stopped


class FlowReliability(Reliability):
    def __init__(self) -> None:
        super().__init__()
        assert isinstance(self.fakes.store, RecordingStore)
        self.fakes.executor = FlowStepFunctions(self.fakes.store, self.fakes.clock)
        self.fakes.executor.waker = self.fakes.waker
        #: job id -> its flow key
        self.flow_of: dict[str, str] = {}

    def _flow_job(self, kind: str, offset: int, key: str, concurrency: str) -> str:
        running, rate = FLOWS[key]
        flow: dict[str, Any] = {"key": key}
        if running is not None:
            flow["max_running"] = running
        if rate is not None:
            flow["max_starts_per_second"] = rate
        job = self.fakes.jobs.create_job(
            OWNER,
            job_spec(schedule(kind, self.now, offset), concurrency=concurrency, flow=flow),
        )
        self.flow_of[job.id] = key
        self._announce(job)
        self._collect()
        return job.id

    @rule(
        target=Reliability.jobs,
        kind=SCHEDULES,
        offset=st.integers(5, 240),
        key=st.sampled_from(sorted(FLOWS)),
        concurrency=st.sampled_from(["allow", "allow", "forbid", "replace"]),
    )
    def create_with_flow(self, kind: str, offset: int, key: str, concurrency: str) -> str:
        return self._flow_job(kind, offset, key, concurrency)

    @rule(count=st.integers(2, 6), offset=st.integers(5, 90), key=st.sampled_from(sorted(FLOWS)))
    def burst(self, count: int, offset: int, key: str) -> None:
        """Several one-time jobs of one flow, all due in the same second."""
        for _ in range(count):
            self._flow_job("at", offset, key, "allow")

    @invariant()
    def flow_limits_hold(self) -> None:
        executor = self.fakes.executor
        assert isinstance(executor, FlowStepFunctions)
        executing = Counter(
            self.flow_of[executor.started[run].job_id]
            for run in executor.running_now
            if executor.started[run].job_id in self.flow_of
        )
        for key, count in executing.items():
            running, _ = FLOWS[key]
            assert running is None or count <= running, (key, count, executor.running_now)
        per_second = Counter(
            (self.flow_of[executor.started[run].job_id], second)
            for run, second in executor.began.items()
            if executor.started[run].job_id in self.flow_of
        )
        for (key, second), count in per_second.items():
            _, rate = FLOWS[key]
            assert rate is None or count <= rate, (key, second, count)

    def delivered(self) -> None:
        self.flow_limits_hold()

    def teardown(self) -> None:
        """Runs over a limit wait for the runs before them to end: first let the flows
        drain (for at most 20 minutes, until no run that is due waits), then settle and
        check as ever."""
        self.settle(self.now + timedelta(minutes=20), self._drained)
        super().teardown()
        self.flow_limits_hold()
        # every run of a flow job that was made ended, none is left waiting
        for run in self.fakes.store.runs.values():
            if run.job_id in self.flow_of and run.scheduled_at <= self.settled_from:
                assert run.status not in (RunStatus.SCHEDULED, RunStatus.QUEUED), run.id

    def _drained(self) -> bool:
        """Does no run that is due wait: none executing, no message on the queues of a run
        due by now (one its flow holds back or gave a later second, one a worker died
        with), no run of a flow job due by now still SCHEDULED or QUEUED?"""
        executor = self.fakes.executor
        assert isinstance(executor, FlowStepFunctions)
        now = self.now
        return (
            not executor.running_now
            and all(message.starts_at > now for message, _ in self.queue)
            and not any(
                run.job_id in self.flow_of
                and run.scheduled_at <= now
                and run.status in (RunStatus.SCHEDULED, RunStatus.QUEUED)
                for run in self.fakes.store.runs.values()
            )
        )


FlowReliability.TestCase.settings = settings(
    derandomize=not os.environ.get("CHRONOQ_PROPERTY_EXPLORE"),
    max_examples=int(os.environ.get("CHRONOQ_PROPERTY_EXAMPLES", "60")),
    stateful_step_count=int(os.environ.get("CHRONOQ_PROPERTY_STEPS", "25")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    report_multiple_bugs=False,
    # (make mutants only asks whether it fails, not for the shortest story)
    phases=[p for p in Phase if p is not Phase.shrink or not os.environ.get("CHRONOQ_NO_SHRINK")],
)
TestFlowReliability = FlowReliability.TestCase
