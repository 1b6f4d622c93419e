"""The ExpectStore port in memory, with the conditional writes of the DynamoDB adapter (its
instants kept to the millisecond, as the adapter keeps them)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from chronoq.domain import ids
from chronoq.domain.silence import Deadline, Expectation, SilenceEvent, check_minute
from chronoq.fakes.store._tables import FakeTables
from chronoq.usecases.ports import Page, Position


def _ms(value: datetime) -> datetime:
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


def _since(expectation: Expectation) -> str:
    """The silent index's sort key (the adapter's fixed-width text sorts the same)."""
    assert expectation.silent_since is not None
    return expectation.silent_since.isoformat()


class FakeExpect(FakeTables):
    def start_expectation(self, job_id: str, within: int, since: datetime) -> Expectation:
        with self._lock:
            kept = self.expectations.get(job_id)
            started = Expectation(
                job_id=job_id,
                within=within,
                since=_ms(since),
                last_success_at=kept.last_success_at if kept else None,
            )
            self.expectations[job_id] = started
            return started

    def change_expectation(self, job_id: str, within: int) -> Expectation | None:
        with self._lock:
            kept = self.expectations.get(job_id)
            if kept is None:
                return None
            changed = kept.model_copy(update={"within": within})
            self.expectations[job_id] = changed
            return changed

    def pause_expectation(self, job_id: str, at: datetime) -> Expectation | None:
        with self._lock:
            kept = self.expectations.get(job_id)
            if kept is None:
                return None
            paused = kept.model_copy(update={"since": _ms(at), "silent_since": None, "owner": ""})
            self.expectations[job_id] = paused
            return paused

    def end_expectation(self, job_id: str) -> None:
        with self._lock:
            self.expectations.pop(job_id, None)

    def get_expectation(self, job_id: str) -> Expectation | None:
        return self.expectations.get(job_id)

    def get_expectations(self, job_ids: Iterable[str]) -> dict[str, Expectation]:
        return {j: self.expectations[j] for j in set(job_ids) if j in self.expectations}

    def record_success(self, job_id: str, at: datetime) -> Expectation | None:
        with self._lock:
            kept = self.expectations.get(job_id)
            at = _ms(at)
            if kept is None or kept.silent_since is not None or not kept.since < at:
                return None
            moved = kept.model_copy(update={"since": at, "last_success_at": at})
            self.expectations[job_id] = moved
            return moved

    def mark_silent(self, expectation: Expectation, event: SilenceEvent) -> bool:
        with self._lock:
            kept = self.expectations.get(expectation.job_id)
            if (
                kept is None
                or kept.silent_since is not None
                or (kept.since, kept.within) != (_ms(expectation.since), expectation.within)
                or (event.job_id, event.key) in self.silences
            ):
                return False
            self.expectations[kept.job_id] = kept.model_copy(
                update={"silent_since": _ms(event.silent_since), "owner": event.owner}
            )
            self._write_event(event)
            return True

    def end_silence(self, expectation: Expectation, event: SilenceEvent) -> bool:
        assert event.recovered_at is not None
        assert expectation.silent_since is not None
        with self._lock:
            kept = self.expectations.get(expectation.job_id)
            if (
                kept is None
                or kept.silent_since != _ms(expectation.silent_since)
                or kept.since != _ms(expectation.since)
                or (event.job_id, event.key) in self.silences
            ):
                return False
            at = _ms(event.recovered_at)
            self.expectations[kept.job_id] = kept.model_copy(
                update={"since": at, "last_success_at": at, "silent_since": None, "owner": ""}
            )
            self._write_event(event)
            return True

    def _write_event(self, event: SilenceEvent) -> None:
        self.silences[(event.job_id, event.key)] = event
        self.silence_stream.append(event)

    def silent_jobs(
        self, owner: str, limit: int, after: Position | None = None
    ) -> Page[Expectation]:
        silent = sorted(
            ((_since(e), e.job_id), e)
            for e in self.expectations.values()
            if e.silent_since is not None and e.owner == owner
        )
        candidates = [e for position, e in silent if after is None or position > after]
        if len(candidates) <= limit:
            return Page(candidates, None)
        last = candidates[limit - 1]
        return Page(candidates[:limit], (_since(last), last.job_id))

    def put_deadlines(self, deadlines: Iterable[Deadline], shards: int, now: datetime) -> None:
        with self._lock:
            for d in deadlines:
                d = d.model_copy(update={"at": _ms(d.at)})
                bucket = ids.bucket(check_minute(d.at, now), ids.shard_of(d.job_id, shards))
                kind = f"expect#{d.job_id}"
                if d.instant is not None:  # (an after job's fan-in wait)
                    kind = f"fanin#{d.job_id}#{d.instant.isoformat()}"
                self.deadlines.setdefault(bucket, {})[f"{d.at.isoformat()}#{kind}"] = d

    def get_silence(self, job_id: str, key: str) -> SilenceEvent | None:
        return self.silences.get((job_id, key))
