"""Queues, executor and artifacts in memory."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from chronoq import resources as r
from chronoq.domain.runs import Priority, Run, RunMessage, attempt_of_line, log_size
from chronoq.execution import batches
from chronoq.execution.contract import ExecutionInput
from chronoq.fakes.store import FakeStore
from chronoq.usecases.delays import message_delay


@dataclass(frozen=True)
class SentMessage:
    priority: Priority
    message: RunMessage
    delay_seconds: int


@dataclass
class FakeQueues:
    sent: list[SentMessage] = field(default_factory=list)
    #: How many requests sending took (SQS: ten messages per request).
    requests: int = 0

    def send(self, messages: Iterable[tuple[Priority, RunMessage]], now: datetime) -> int:
        batch = [SentMessage(p, m, message_delay(m, now, p)) for p, m in messages]
        by_priority = {p: sum(1 for s in batch if s.priority is p) for p in Priority}
        self.requests += sum(-(-n // 10) for n in by_priority.values())
        self.sent.extend(batch)
        return len(batch)

    def take(self) -> list[RunMessage]:
        """Every message sent so far, highest priority first (then as sent); the queues are
        left empty."""
        order = {p: i for i, p in enumerate(Priority)}
        taken = sorted(self.sent, key=lambda s: order[s.priority])
        self.sent = []
        return [s.message for s in taken]


@dataclass
class FakeExecutor:
    """Executions by name, as Step Functions keeps them: STANDARD ones started once per
    name and stoppable; EXPRESS ones (runs that fit them) started anew each time and never
    stopped."""

    started: dict[str, ExecutionInput] = field(default_factory=dict)
    #: How often start was asked, per run (duplicates included).
    starts: dict[str, int] = field(default_factory=dict)
    stopped: dict[str, str] = field(default_factory=dict)
    #: Executions that ended by themselves (see ``finish``).
    finished: set[str] = field(default_factory=set)
    #: How many EXPRESS executions each run got.
    express: dict[str, int] = field(default_factory=dict)

    #: The runs of each EXPRESS execution started, in order.
    express_batches: list[list[str]] = field(default_factory=list)

    def start(self, run_id: str, execution_input: ExecutionInput) -> bool:
        """As Step Functions: on STANDARD the same name and input again is a no-op while
        the execution runs, refused once it has ended; on EXPRESS another execution."""
        if execution_input.fits_express():
            self.start_batch([execution_input])
            return True
        self.starts[run_id] = self.starts.get(run_id, 0) + 1
        if run_id in self.started:
            running = run_id not in self.stopped and run_id not in self.finished
            return running and self.started[run_id] == execution_input
        self.started[run_id] = execution_input
        return True

    def start_batch(self, inputs: list[ExecutionInput]) -> None:
        for batch in batches.chunks([i.document() for i in inputs]):
            self.express_batches.append([d["run_id"] for d in batch])
        for execution_input in inputs:
            run_id = execution_input.run_id
            self.starts[run_id] = self.starts.get(run_id, 0) + 1
            self.express[run_id] = self.express.get(run_id, 0) + 1
            self.started.setdefault(run_id, execution_input)

    def finish(self, run_id: str) -> None:
        """The execution ended (what the state machine does at its end)."""
        self.finished.add(run_id)

    def stop(self, run_id: str, reason: str) -> bool:
        if run_id in self.express:
            return False  # EXPRESS executions cannot be stopped
        if run_id in self.started and run_id not in self.stopped and run_id not in self.finished:
            self.stopped[run_id] = reason
            return True
        return run_id in self.started


@dataclass
class FakeArtifacts:
    """Outputs and logs; log lines are kept only for runs the store has (as the run item
    holds them on AWS)."""

    store: FakeStore
    bucket: str = "fake-outputs"
    objects: dict[str, str] = field(default_factory=dict)
    logs: dict[tuple[str, str], list[str]] = field(default_factory=dict)

    def save_output(
        self, job_id: str, run_id: str, attempt: int, output: str, output_location: str | None
    ) -> dict[str, str]:
        if len(output.encode()) <= r.INLINE_BYTES:
            return {"output": output, "output_location": ""}
        base = (output_location or f"s3://{self.bucket}/runs").rstrip("/")
        location = f"{base}/{job_id}/{run_id}/output-{attempt}.json"
        self.objects[location] = output
        return {"output": "", "output_location": location}

    def append_logs(
        self,
        job_id: str,
        run_id: str,
        attempt: int,
        lines: list[str],
        output_location: str | None,
    ) -> None:
        if self.store.get_run(job_id, run_id) is not None:
            self.logs.setdefault((job_id, run_id), []).extend(lines)

    def log_object(
        self, job_id: str, run_id: str, attempt: int, lines: list[str], output_location: str | None
    ) -> str | None:
        if log_size(lines) <= r.INLINE_BYTES:
            return None
        base = (output_location or f"s3://{self.bucket}/runs").rstrip("/")
        location = f"{base}/{job_id}/{run_id}/attempt-{attempt}.log"
        self.objects[location] = "\n".join(lines) + "\n"
        return location

    def keep_logs(self, job_id: str, run_id: str, lines: list[str], objects: list[str]) -> None:
        """What the state machine's final write does with an attempt's logs (played by tests
        and fakes of the state machine)."""
        if self.store.get_run(job_id, run_id) is not None:
            kept = self.logs.setdefault((job_id, run_id), [])
            kept.extend(lines)
            for location in objects:
                kept.extend(self.objects[location].splitlines())

    def read_output(self, run: Run) -> str | None:
        if run.output_location:
            return self.objects[run.output_location]
        return run.output

    def read_logs(self, job_id: str, run_id: str) -> list[str]:
        return sorted(self.logs.get((job_id, run_id), []), key=attempt_of_line)

    def erase_job_objects(self, job_id: str) -> int:
        prefix = f"s3://{self.bucket}/runs/{job_id}/"
        found = [location for location in self.objects if location.startswith(prefix)]
        for location in found:
            del self.objects[location]
        for key in [k for k in self.logs if k[0] == job_id]:
            del self.logs[key]
        return len(found)
