"""The tables' key layout (domain.keys): no kind of item can take another's key."""

from __future__ import annotations

from datetime import UTC, datetime

from chronoq.domain import flow, ids, keys

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def _prefix_free(prefixes: tuple[str, ...]) -> bool:
    return all(a == b or not b.startswith(a) for a in prefixes for b in prefixes) and len(
        set(prefixes)
    ) == len(prefixes)


def test_given_each_tables_prefixes_when_compared_then_none_begins_another() -> None:
    for prefixes in (keys.JOBS_TABLE, keys.RUNS_TABLE, keys.SCHEDULE_TABLE):
        assert _prefix_free(prefixes), prefixes


def test_given_every_kind_of_jobs_table_key_when_made_then_each_begins_with_its_own_prefix() -> (
    None
):
    made = {
        keys.JOB: ids.new_job_id(),
        keys.COUNT: keys.count_key("job_alice"),
        keys.NAME: keys.name_key("job_alice", "job_x"),
        keys.IDEMPOTENCY_KEY: keys.idempotency_key("job_k"),
        keys.FLOW: flow.item_key("job_alice", "job_k"),
        keys.USAGE: keys.usage_key("job_alice"),
    }
    for prefix, key in made.items():
        assert [p for p in keys.JOBS_TABLE if key.startswith(p)] == [prefix], key


def test_given_runs_and_buckets_when_keyed_then_they_never_take_a_backfill_or_checkpoint_key() -> (
    None
):
    job = ids.new_job_id()
    assert not ids.run_id(job, NOW).startswith(keys.BACKFILL)
    assert not ids.backfill_run_id(job, NOW, ids.new_backfill_id(NOW)).startswith(keys.BACKFILL)
    assert ids.bucket(NOW, 3) != keys.CHECKPOINT_BUCKET


def test_given_owners_and_names_that_run_together_when_keyed_then_their_name_keys_differ() -> None:
    assert keys.name_key("a#b", "c") != keys.name_key("a", "b#c")
