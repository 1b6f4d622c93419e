"""Each mechanism chronoq's promises rest on, taken out of a scratch copy of the tree, and the
fast tests (tests/unit, tests/contract) that catch it: ``make mutants``.

A promise is proven only by a test that fails without its mechanism. For each entry of
``MUTANTS`` this copies the tree into a temporary directory (never touching this one),
applies the removal there, runs the fast tests on the copy and prints the tests that failed.
A removal no test catches is a promise nothing proves: the script then exits 1.

    python -m tests.mutants                 # every removal, the whole fast layer each time
    python -m tests.mutants --quick         # only the tests each entry names (a minute or so)
    python -m tests.mutants quota-delete    # only the removals named
    python -m tests.mutants --list          # the list, nothing run

Why this module is long: the list of every mutant, one entry per mechanism (the removal, and the
fast tests that catch it); the runner itself is about a hundred lines.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: What the copy leaves out: the environment and what tools write.
LEFT_OUT = (
    ".venv",
    ".git",
    ".chronoq",
    "cdk.out",
    "node_modules",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    "__pycache__",
    ".hypothesis",
    "build",
    "test-artifacts",
)
FAST = ("tests/unit", "tests/contract")

CORE = "layers/core/chronoq"
ASL = f"{CORE}/execution/statemachine/run.asl.json"


@dataclass(frozen=True)
class Mutant:
    """A mechanism, how it is removed (each ``(old, new)`` edit of ``path``: ``old`` must
    occur exactly once, unless ``every``), and the fast tests that prove it (files or node
    ids: what ``--quick`` runs, and what the table of docs/concepts/reliability.md names)."""

    name: str
    mechanism: str
    path: str
    edits: tuple[tuple[str, str], ...]
    tests: tuple[str, ...]
    #: each ``old`` may occur more than once: every occurrence is replaced
    every: bool = False


RELIABILITY = "tests/unit/test_reliability_properties.py"
INTERLEAVINGS = "tests/unit/usecases/test_interleavings.py"
START = "tests/unit/usecases/test_start.py"
JOBS = "tests/unit/usecases/test_jobs.py"
LEASE = "tests/unit/test_lease.py"
AUDIT_API = "tests/unit/test_api_audit.py"
AUDIT_CONTRACT = "tests/contract/test_audit_trail.py"
SILENCE = "tests/unit/usecases/test_silence.py"
SILENCE_STORE = "tests/contract/test_expect_store.py"

#: The fast tests of completion triggers.
AFTER = "tests/unit/usecases/test_after.py"

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "generation",
        "run ids carry the job's schedule generation",
        f"{CORE}/domain/ids.py",
        (
            (
                '    if generation != 1:\n        stamp += f"-g{generation}"\n',
                "",
            ),
        ),
        (RELIABILITY,),
    ),
    Mutant(
        "mark-running",
        "MarkRunning's condition (the ASL): only from no record, SCHEDULED or QUEUED",
        ASL,
        (
            (
                '"ConditionExpression": "attribute_not_exists(run_id) OR #status IN'
                ' (:scheduled, :queued)"',
                '"ConditionExpression": "attribute_not_exists(run_id) OR attribute_exists(run_id)"',
            ),
        ),
        (START, RELIABILITY),
    ),
    Mutant(
        "outcome-condition",
        "an outcome is recorded only over RUNNING (never over CANCELLED)",
        ASL,
        (
            (
                '"ConditionExpression": "#status = :running"',
                '"ConditionExpression": "attribute_exists(run_id)"',
            ),
        ),
        ("tests/unit/usecases/test_runs.py",),
        every=True,
    ),
    Mutant(
        "close-before-send",
        "a minute is closed only once its runs are sent",
        f"{CORE}/usecases/dispatch.py",
        (
            (
                "                self.store.open_minute(shard, minute)\n",
                "                self.store.open_minute(shard, minute)\n"
                "                self.store.close_minute(shard, minute)\n",
            ),
        ),
        (INTERLEAVINGS,),
    ),
    Mutant(
        "recheck-before-write-create",
        "a new job's occurrence: the opened minute is read after the occurrence is written",
        f"{CORE}/usecases/timeindex.py",
        (
            (
                "        occurrences = self.write(pairs, now, pack)\n",
                "        pairs = list(pairs)\n"
                "        if dispatched is None:\n"
                "            shards = {ids.shard_of(job.id, self.shards) for job, _ in pairs}\n"
                "            dispatched = {s: self.store.opened_through(s) for s in shards}\n"
                "        occurrences = self.write(pairs, now, pack)\n",
            ),
        ),
        (INTERLEAVINGS,),
    ),
    Mutant(
        "recheck-before-write-change",
        "a changed job's occurrence: the opened minute is read after the occurrence is written",
        f"{CORE}/usecases/jobs.py",
        (
            (
                "        written = self.index.write(pending, now)\n",
                "        shards = range(self.index.shards)\n"
                "        opened = {s: self.store.opened_through(s) for s in shards}\n"
                "        written = self.index.write(pending, now)\n",
            ),
            (
                "        self.index.send_if_dispatched(written, now)\n",
                "        self.index.send_if_dispatched(written, now, opened)\n",
            ),
        ),
        (INTERLEAVINGS,),
    ),
    Mutant(
        "recheck-before-write-chain",
        "a job chained on from a run the API sent itself: the opened minute is read after the "
        "next occurrence is written",
        f"{CORE}/usecases/timeindex.py",
        (
            (
                "self.chain(late, jobs, now, dispatched)\n",
                "self.chain(late, jobs, now, checkpoints)\n",
            ),
        ),
        (INTERLEAVINGS,),
    ),
    Mutant(
        "lease-never-lapses",
        "a claim lapses (its worker died): the run is claimed again when SQS delivers it again",
        f"{CORE}/resources.py",
        (("CLAIM_LEASE_SECONDS = 60\n", "CLAIM_LEASE_SECONDS = 10**9\n"),),
        (LEASE, START),
    ),
    Mutant(
        "lease-outlives-visibility",
        "the claim lapses before SQS delivers the message again (visibility timeout)",
        f"{CORE}/resources.py",
        (("CLAIM_LEASE_SECONDS = 60\n", "CLAIM_LEASE_SECONDS = 181\n"),),
        (LEASE,),
    ),
    Mutant(
        "lease-shorter-than-worker",
        "a claim outlasts the worker that holds it (no second worker starts the run meanwhile)",
        f"{CORE}/resources.py",
        (("CLAIM_LEASE_SECONDS = 60\n", "CLAIM_LEASE_SECONDS = 20\n"),),
        (LEASE,),
    ),
    Mutant(
        "lease-ignored-by-fake",
        "the fake store's claim lapses after CLAIM_LEASE_SECONDS, as DynamoDB's does",
        f"{CORE}/fakes/store/jobs.py",
        (
            (
                "            lapsed = claimed_at is None or now - claimed_at >= timedelta(",
                "            lapsed = claimed_at is None or now - claimed_at >= 10 * timedelta(",
            ),
        ),
        ("tests/contract/test_store.py",),
    ),
    Mutant(
        "ssrf-connects-by-name",
        "the SSRF guard connects to the address it checked, not to the name again",
        f"{CORE}/execution/egress.py",
        (
            (
                "            pool = urllib3.HTTPConnectionPool(str(address), port, retries=False,"
                " maxsize=1)",
                "            pool = urllib3.HTTPConnectionPool(host, port, retries=False, maxsize=1)",
            ),
        ),
        ("tests/unit/test_egress.py",),
    ),
    Mutant(
        "ssrf-resolved-unchecked",
        "the SSRF guard checks every address a name resolves to, at call time",
        f"{CORE}/execution/egress.py",
        (("        for address in addresses:\n", "        for address in addresses[:0]:\n"),),
        ("tests/unit/test_egress.py", "tests/unit/test_network.py"),
    ),
    Mutant(
        "quota-unenforced",
        "jobs per owner: a create past max_jobs_per_owner is refused",
        f"{CORE}/usecases/jobs.py",
        (
            (
                "if not self.store.count_job(owner, +1, self.max_jobs_per_owner):",
                "if not self.store.count_job(owner, +1, None):",
            ),
        ),
        ("tests/unit/usecases/test_quota.py",),
    ),
    Mutant(
        "quota-not-given-back",
        "jobs per owner: a deleted job no longer counts",
        f"{CORE}/usecases/jobs.py",
        (
            (
                "    store.count_job(job.owner, -1)\n    store.release_name(",
                "    store.release_name(",
            ),
        ),
        ("tests/unit/usecases/test_quota.py",),
    ),
    Mutant(
        "quota-kept-on-failure",
        "jobs per owner: a create that fails (queues unavailable) is not counted",
        f"{CORE}/usecases/jobs.py",
        (
            (
                "            remove_job(self.store, job, now)  # (its schedule item",
                "            self.store.delete_job(job.id)  # (its schedule item",
            ),
        ),
        ("tests/unit/usecases/test_quota.py",),
    ),
    Mutant(
        "tenancy",
        "a user sees and changes only their own jobs",
        f"{CORE}/usecases/jobs.py",
        (("        if job is None or job.owner != owner:\n", "        if job is None:\n"),),
        (JOBS,),
    ),
    Mutant(
        "idempotency",
        "a request sent again with its Idempotency-Key gets the first answer",
        f"{CORE}/usecases/idempotency.py",
        (("        if held is not None:\n", "        if held is not None and False:\n"),),
        ("tests/unit/usecases/test_pages.py",),
    ),
    Mutant(
        "worker-drops-superseded",
        "nothing a change removed starts: the worker drops an older generation",
        f"{CORE}/usecases/start.py",
        (
            (
                "        if not claimed and not job.is_current(run):\n",
                "        if not claimed and not job.is_current(run) and False:\n",
            ),
        ),
        (START,),
    ),
    Mutant(
        "dispatcher-drops-superseded",
        "nothing a change removed is sent: the dispatcher drops an older generation",
        f"{CORE}/usecases/dispatch.py",
        (
            (
                "current = [o for o in occurrences if o.job_id in jobs and jobs[o.job_id]"
                ".is_current(o)]",
                "current = [o for o in occurrences if o.job_id in jobs]",
            ),
        ),
        ("tests/unit/usecases/test_dispatch.py",),
    ),
    Mutant(
        "send-failure-reopens",
        "an occurrence that could not be sent has the dispatcher read its minute again",
        f"{CORE}/usecases/timeindex.py",
        (
            (
                "                    self.store.reopen_minute(shard, minute)\n",
                "                    pass\n",
            ),
        ),
        ("tests/unit/usecases/test_dispatch.py",),
    ),
    Mutant(
        "cancel-stops-execution",
        "cancel stops the run's execution (STANDARD)",
        f"{CORE}/usecases/cancel.py",
        (("        stopped = self.executor.stop(run_id, reason)\n", "        stopped = False\n"),),
        ("tests/unit/usecases/test_runs.py",),
    ),
    Mutant(
        "asl-status-names",
        "every status the state machine writes is a run status (TIMED_OUT included)",
        ASL,
        (('"S": "TIMED_OUT"', '"S": "TIMEDOUT"'),),
        ("tests/unit/test_contracts.py",),
    ),
    Mutant(
        "express-billing-step",
        "EXPRESS executions are billed in steps of 100 ms at list price",
        f"{CORE}/local/usage.py",
        (("            step = r.EXPRESS_BILLING_STEP_MS\n", "            step = 1\n"),),
        ("tests/unit/test_usage.py",),
    ),
    Mutant(
        "create-idempotency-ignored",
        "POST /jobs applies its Idempotency-Key: a create sent again makes no second job",
        "functions/api/handler.py",
        (
            (
                "    answer, headers = _once(owner, request, lambda: view(service.jobs.create_job(owner, spec, by)))\n",
                "    answer, headers = view(service.jobs.create_job(owner, spec, by)), None\n",
            ),
        ),
        ("tests/unit/test_api_routes.py",),
    ),
    Mutant(
        "rerun-idempotency-ignored",
        "POST /runs/{id}/rerun applies its Idempotency-Key: a rerun sent again makes no second run",
        "functions/api/handler.py",
        (
            (
                "    answer, headers = _once(\n"
                "        owner,\n"
                "        key,\n"
                "        lambda: view(service.reruns.rerun_run(owner, run_id, by, given.parameters, given.cascade)),\n"
                "    )\n",
                "    answer, headers = view(service.reruns.rerun_run(owner, run_id, by, given.parameters, given.cascade)), None\n",
            ),
        ),
        ("tests/unit/test_api_routes.py",),
    ),
    Mutant(
        "progress-mark",
        "a run's end is counted once: its mark (counted false -> true) refuses a duplicate",
        f"{CORE}/aws/store/backfills.py",
        (
            (
                '"ConditionExpression": "#c = :no AND #s = :s",',
                '"ConditionExpression": "(#c = :no OR #c = :yes) AND #s = :s",',
            ),
        ),
        ("tests/contract/test_progress_store.py",),
    ),
    Mutant(
        "progress-mark-fake",
        "a run's end is counted once (the fakes' mark, as the usecases' property test sees it)",
        f"{CORE}/fakes/store/backfills.py",
        (
            (
                "if (end.job_id, end.run_id) not in self.runs.uncounted",
                "if (end.job_id, end.run_id) not in self.runs",
            ),
        ),
        ("tests/unit/usecases/test_progress.py", "tests/contract/test_progress_store.py"),
    ),
    Mutant(
        "progress-counters-read",
        "a backfill's counters move on only from the values read (its completion is exact)",
        f"{CORE}/aws/store/backfills.py",
        (
            (
                '"ConditionExpression": "#state = :state AND #ended = :ended",',
                '"ConditionExpression": "#state = :state AND #ended >= :ended",',
            ),
        ),
        ("tests/contract/test_progress_store.py",),
    ),
    Mutant(
        "usage-version",
        "two requests of one owner at once cannot both take the last of a limit",
        f"{CORE}/aws/store/backfills.py",
        (
            (
                "            if version:\n"
                '                values[":v"] = version\n'
                '                change["ConditionExpression"] = "#v = :v"\n'
                "            else:\n"
                '                change["ConditionExpression"] = "attribute_not_exists(#v)"\n',
                "",
            ),
        ),
        ("tests/contract/test_progress_store.py",),
    ),
    Mutant(
        "backfill-limits",
        "backfills per job, per owner, and the fire times they hold are limited per owner",
        f"{CORE}/usecases/backfills.py",
        (
            (
                "            check_backfill(usage, self.limits, backfill.job_id, backfill.total)\n",
                "",
            ),
        ),
        ("tests/unit/test_api_limits.py",),
    ),
    Mutant(
        "rerun-limits",
        "re-runs are limited by the fire times an owner holds",
        f"{CORE}/usecases/reruns.py",
        (("            check_reruns(usage, self.limits, runs, at_fault)\n", ""),),
        ("tests/unit/test_api_limits.py",),
    ),
    Mutant(
        "job-delete-ends-backfills",
        "a deleted job's running backfills are cancelled (they leave their owner's usage)",
        f"{CORE}/usecases/jobs.py",
        (("    end_backfills_of(store, job, now)\n", ""),),
        ("tests/unit/usecases/test_progress.py",),
    ),
    Mutant(
        "flow-park",
        "a run over its flow's max_running is parked, not sent to look again every second",
        f"{CORE}/usecases/start.py",
        (
            (
                "        if answer.start is None and answer.held_by is not None:\n",
                "        if False:\n",
            ),
        ),
        ("tests/unit/usecases/test_flow.py", "tests/unit/usecases/test_wake.py"),
    ),
    Mutant(
        "flow-wake",
        "the end of a run that held flow slots wakes the runs parked on them",
        f"{CORE}/usecases/wake.py",
        (("        if messages:\n            self.queues.send(messages, now)\n", ""),),
        ("tests/unit/usecases/test_flow.py", "tests/unit/usecases/test_wake.py"),
    ),
    Mutant(
        "wake-order",
        "parked runs are woken higher priority first, then the longest waiting",
        f"{CORE}/domain/flow.py",
        (
            (
                '    return f"{_RANK.get(priority, len(_RANK))}#{format_instant(held_at)}#{run_id}"',
                '    return f"{format_instant(held_at)}#{run_id}"',
            ),
        ),
        ("tests/unit/usecases/test_wake.py",),
    ),
    Mutant(
        "due-starts-now",
        "a run already due starts in the current second unless its flow paces starts per second",
        f"{CORE}/domain/flow.py",
        (
            (
                "    earliest = now + 1 if limits.max_starts_per_second is not None else now\n",
                "    earliest = now + 1\n",
            ),
        ),
        ("tests/unit/test_flow.py", "tests/unit/usecases/test_flow.py"),
    ),
    Mutant(
        "paced-starts-ahead",
        "a flow that paces starts per second counts each start in a second still to come",
        f"{CORE}/domain/flow.py",
        (
            (
                "    earliest = now + 1 if limits.max_starts_per_second is not None else now\n",
                "    earliest = now\n",
            ),
        ),
        ("tests/unit/test_flow.py",),
    ),
    Mutant(
        "asked-in-flight",
        "runs asked for count against their owner's runs asked for under way",
        f"{CORE}/usecases/flow.py",
        (("    if asked:\n", "    if False:\n"),),
        ("tests/unit/usecases/test_wake.py",),
    ),
    Mutant(
        "trigger-limit",
        "a job's triggers not started yet are limited",
        f"{CORE}/usecases/jobs.py",
        (
            (
                "        check_trigger(self.limits, job.id, self.store.count_waiting_triggers"
                "(job.id, since, most))\n",
                "",
            ),
        ),
        ("tests/unit/test_api_limits.py",),
    ),
    Mutant(
        "pack-names",
        "two pages of a minute chained on under one pack name are two items",
        f"{CORE}/aws/codecs.py",
        (
            (
                '"due": f"{format_instant(first.starts_at)}#pack#{key}#{first.run_id}",',
                '"due": f"{format_instant(first.starts_at)}#pack#{key}",',
            ),
        ),
        ("tests/contract/test_store.py",),
    ),
    Mutant(
        "secret-output-scrub",
        "the values of a run's secrets are scrubbed from its output and log",
        f"{CORE}/usecases/attempts.py",
        (
            (
                "            result = secrets.scrub_json(result, resolved.values())\n",
                "",
            ),
        ),
        ("tests/unit/usecases/test_secrets.py",),
    ),
    Mutant(
        "secret-error-scrub",
        "the values of a run's secrets are scrubbed from its error",
        f"{CORE}/usecases/attempts.py",
        (
            (
                "            scrubbed = _scrubbed(error, resolved.values())\n",
                "            scrubbed = error\n",
            ),
        ),
        ("tests/unit/usecases/test_secrets.py",),
    ),
    Mutant(
        "secret-cache-version",
        "a secret's value is cached by its version: a rotation reaches the next run",
        f"{CORE}/usecases/secrets.py",
        (("        key = (owner, name, version)\n", "        key = (owner, name, 0)\n"),),
        ("tests/unit/usecases/test_secrets.py",),
    ),
    Mutant(
        "secret-cache-time",
        "a secret's value is cached for a bounded time",
        f"{CORE}/usecases/secrets.py",
        (
            (
                "            if cached is not None and now - cached[0] < self.cache_seconds:\n",
                "            if cached is not None:\n",
            ),
        ),
        ("tests/unit/usecases/test_secrets.py",),
    ),
    Mutant(
        "secret-uses",
        "a job names only its owner's secrets, noted so that a secret named is not deleted",
        f"{CORE}/usecases/jobs.py",
        (
            (
                "            secrets.use(self.store, owner, job.id, spec, names)\n",
                "",
            ),
        ),
        ("tests/unit/usecases/test_secrets.py", "tests/unit/test_api_secrets.py"),
    ),
    Mutant(
        "erasure-deleted-jobs",
        "an erasure takes out the runs of the owner's jobs deleted before, that other stores know",
        f"{CORE}/usecases/erasure.py",
        (
            (
                "        job_ids = sorted({job.id for job in jobs} | set(self.known_jobs(owner)))\n",
                "        job_ids = sorted({job.id for job in jobs})\n",
            ),
        ),
        ("tests/unit/usecases/test_erasure.py",),
    ),
    Mutant(
        "erasure-cancel",
        "an erasure stops the owner's runs under way before taking their records out",
        f"{CORE}/usecases/erasure.py",
        (
            (
                "            cancelled += self._cancel_under_way(job.id, owner, reason)\n",
                "",
            ),
        ),
        ("tests/unit/usecases/test_erasure.py",),
    ),
    Mutant(
        "in-flight-limit",
        "an owner's runs in flight are held to max_runs_in_flight: one more waits, parked",
        f"{CORE}/usecases/start.py",
        (
            (
                "            limit = max(self.runs_in_flight, 0) if fit > claimed else 1 << 62\n",
                "            limit = 1 << 62\n",
            ),
        ),
        ("tests/unit/usecases/test_in_flight.py",),
    ),
    Mutant(
        "in-flight-priority",
        "of an owner's runs due together, the highest priority ones get its room first",
        f"{CORE}/usecases/start.py",
        (
            (
                "_PRIORITY_ORDER[ready.job.priority], n)",
                "0, n)",
            ),
        ),
        ("tests/unit/usecases/test_in_flight.py",),
    ),
    Mutant(
        "in-flight-give-back",
        "a run's end gives its count back and wakes a run parked on its owner's count",
        f"{CORE}/usecases/wake.py",
        (
            (
                "            left = self.store.give_in_flight(key, inflight.grouped(buckets))\n",
                "            left = self.store.get_in_flight(key)\n",
            ),
        ),
        ("tests/unit/usecases/test_in_flight.py",),
    ),
    Mutant(
        "in-flight-heal",
        "a count never given back (a dead worker) stops counting at its run's worst-case end",
        f"{CORE}/usecases/start.py",
        (
            (
                "        if expired:\n            self.store.heal_in_flight(key, expired)\n",
                "",
            ),
        ),
        ("tests/unit/usecases/test_in_flight.py",),
    ),
    Mutant(
        "in-flight-unstarted",
        "a run counted whose execution does not start gives its count back",
        f"{CORE}/usecases/start.py",
        (
            (
                "                    self._give_back([d for _, d in together])\n",
                "",
            ),
        ),
        ("tests/unit/usecases/test_in_flight.py",),
    ),
    Mutant(
        "audit-entry",
        "a change to a job adds an entry to its audit trail (here: a pause)",
        f"{CORE}/usecases/jobs.py",
        (
            (
                "        record(self.audit, now, owner, job.id, Action.PAUSE, by,"
                " state_change(job, stored, now))\n",
                "",
            ),
        ),
        (AUDIT_API,),
    ),
    Mutant(
        "audit-after-store",
        "an audit entry is added once the change is stored (a refused change adds none)",
        f"{CORE}/usecases/jobs.py",
        (
            (
                "        record(self.audit, now, owner, job.id, Action.CHANGE, by,"
                " spec_change(job, changed))\n",
                "",
            ),
            (
                "        job = self._stored(owner, job_id)\n        if patch.version is not None",
                "        job = self._stored(owner, job_id)\n"
                "        record(self.audit, self.clock(), owner, job.id, Action.CHANGE, by, [])\n"
                "        if patch.version is not None",
            ),
        ),
        (AUDIT_API,),
    ),
    Mutant(
        "audit-caller",
        "every route that changes a job passes its caller (who, from what, which request)",
        "functions/api/handler.py",
        (
            (
                "    return view(service.jobs.pause_job(_owner(), job_id, _by()))\n",
                "    return view(service.jobs.pause_job(_owner(), job_id))\n",
            ),
        ),
        (AUDIT_API,),
    ),
    Mutant(
        "audit-overwrite-fake",
        "an audit entry is never written over: the fake refuses a key that exists",
        f"{CORE}/fakes/audit.py",
        (
            (
                "            if key in self.entries:\n"
                '                raise EntryExists(f"audit entry {entry.key} of job {entry.job_id}")\n',
                "",
            ),
        ),
        (AUDIT_CONTRACT,),
    ),
    Mutant(
        "audit-overwrite-engine",
        "an audit entry is never written over: the engine's INSERT refuses a key that exists",
        f"{CORE}/local/engine/tables.py",
        (
            (
                "            if old_stored is None:\n"
                "                self._commit([write])\n"
                "        if old_stored is not None:\n",
                "            self._commit([write])\n        if False:\n",
            ),
        ),
        (f"tests/contract/engine/{Path(AUDIT_CONTRACT).name}", "tests/unit/engine/test_tables.py"),
    ),
    Mutant(
        "audit-tenancy",
        "an owner never reads the entries of another owner's job (the fake)",
        f"{CORE}/fakes/audit.py",
        (("        newest_first = [(p, e) for p, e in newest_first if e.owner == owner]\n", ""),),
        (AUDIT_API, AUDIT_CONTRACT),
    ),
    Mutant(
        "audit-tenancy-dynamodb",
        "an owner never reads the entries of another owner's job (the DynamoDB adapter)",
        f"{CORE}/aws/audit.py",
        (
            (
                "                if entry.owner != owner:\n"
                "                    return Page(found, None)\n",
                "",
            ),
        ),
        (AUDIT_CONTRACT,),
    ),
    Mutant(
        "audit-tenancy-job",
        "a trail none of whose entries is the caller's is not found unless its job is theirs",
        f"{CORE}/usecases/audit.py",
        (("            if job is None or job.owner != owner:\n", "            if job is None:\n"),),
        (AUDIT_API,),
    ),
    Mutant(
        "audit-mask",
        "a value that looks like a credential is masked before an entry keeps it",
        f"{CORE}/domain/audit.py",
        (
            (
                "        return secrets.MASK if secrets.credential_warnings({name: value}, name)"
                " else value\n",
                "        return value\n",
            ),
        ),
        (AUDIT_API, "tests/unit/test_audit.py"),
    ),
    Mutant(
        "audit-diff",
        "an entry lists only the fields a change changed",
        f"{CORE}/domain/audit.py",
        (("        if old.get(path) != new.get(path)\n", "        if True\n"),),
        (AUDIT_API, "tests/unit/test_audit.py"),
    ),
    Mutant(
        "silence-once",
        "a job is marked silent only if it is not silent already (the adapter's condition)",
        f"{CORE}/aws/store/expect.py",
        (
            (
                '"#s = :s AND #w = :w AND attribute_not_exists(silent_since)"',
                '"#s = :s AND #w = :w"',
            ),
        ),
        (SILENCE_STORE,),
    ),
    Mutant(
        "silence-once-fake",
        "a job is marked silent only if it is not silent already (the fakes' condition)",
        f"{CORE}/fakes/store/expect.py",
        (
            (
                "                or kept.silent_since is not None\n                or (kept.since",
                "                or (kept.since",
            ),
        ),
        (SILENCE, SILENCE_STORE),
    ),
    Mutant(
        "silence-recovered",
        "a silence is ended (its RECOVERED record written) only from the silence as read",
        f"{CORE}/aws/store/expect.py",
        (
            (
                '"ConditionExpression": "#s = :s AND silent_since = :ss",',
                '"ConditionExpression": "attribute_exists(job_id)",',
            ),
            ('            "ConditionExpression": "attribute_not_exists(run_id)",\n', ""),
        ),
        (SILENCE_STORE,),
    ),
    Mutant(
        "silence-again",
        "a success heard again finds its wait already moved on: its deadline written again, no"
        " silence ended twice",
        f"{CORE}/usecases/silence.py",
        (
            (
                "                    self._deadline(kept, now)  # (its first hearing may have died"
                " before)\n",
                "",
            ),
        ),
        (SILENCE,),
    ),
    Mutant(
        "silence-paused",
        "a pause ends the wait: a dispatcher that read the job active marks nothing",
        f"{CORE}/fakes/store/expect.py",
        (
            (
                'update={"since": _ms(at), "silent_since": None, "owner": ""}',
                'update={"silent_since": None, "owner": ""}',
            ),
        ),
        (SILENCE,),
    ),
    Mutant(
        "silence-costs-nothing",
        "only a run of a job with expect names an expectation in its slots (what the notifier"
        " acts on)",
        f"{CORE}/execution/contract.py",
        (
            (
                "            *([silence.slot(job.id)] if job.expect is not None else []),",
                "            silence.slot(job.id),",
            ),
        ),
        (SILENCE,),
    ),
    Mutant(
        "silence-heard",
        "the end of a run of a job with expect reaches the notifier (the stream's filter), and"
        " a silence's record as it is written",
        f"{CORE}/aws/streams.py",
        (
            (
                '"slots": {"S": [{"prefix": FLOW}, {"prefix": EXPECT}, {"prefix": AFTER}]},',
                '"slots": {"S": [{"prefix": FLOW}, {"prefix": AFTER}]},',
            ),
            (
                'inserted = image if n else {"status": {"S": sorted(audience + SILENCE)}}',
                "inserted = image",
            ),
        ),
        ("tests/unit/test_stream_filter.py",),
    ),
    Mutant(
        "silence-holds-up-no-run",
        "a failure to look at a minute's deadlines writes them again for later: the minute's runs"
        " are sent all the same",
        f"{CORE}/usecases/dispatch.py",
        (
            (
                "        try:\n            return self.silence.due(deadlines, now)\n"
                "        except Exception:\n",
                "        if True:\n            return self.silence.due(deadlines, now)\n"
                "        else:\n",
            ),
        ),
        (SILENCE,),
    ),
    Mutant(
        "silence-tenancy",
        "an owner's silent jobs are the owner's only (the silent index's partition)",
        f"{CORE}/fakes/store/expect.py",
        (
            (
                "if e.silent_since is not None and e.owner == owner",
                "if e.silent_since is not None",
            ),
        ),
        (SILENCE_STORE,),
    ),
    # --- completion triggers (docs/guides/pipelines.md) ------------------------------------------
    Mutant(
        "after-heard",
        "the end of a run of a job that after jobs follow reaches the notifier (the stream's filter)",
        f"{CORE}/aws/streams.py",
        (
            (
                '"slots": {"S": [{"prefix": FLOW}, {"prefix": EXPECT}, {"prefix": AFTER}]},',
                '"slots": {"S": [{"prefix": FLOW}, {"prefix": EXPECT}]},',
            ),
        ),
        ("tests/unit/test_stream_filter.py",),
    ),
    Mutant(
        "after-marker",
        "a run of a followed job names its followers among its slots (no read to find them)",
        f"{CORE}/execution/contract.py",
        (("*([after.slot(job.followed_by)] if job.followed_by else []),", ""),),
        (AFTER,),
    ),
    Mutant(
        "after-graph-version",
        "two changes racing on an owner's pipeline graph: the second's write fails (no cycle"
        " slips through)",
        f"{CORE}/fakes/store/after.py",
        (("if (stored.version if stored else 0) != graph.version:", "if False:"),),
        (AFTER, "tests/contract/test_after_store.py"),
    ),
    Mutant(
        "after-cycle",
        "a change that would close a cycle of after jobs is refused",
        f"{CORE}/usecases/after.py",
        (("                if cycle is not None:", "                if False:"),),
        (AFTER, "tests/unit/test_api_after.py"),
    ),
    Mutant(
        "after-fan-in",
        "an after job runs for an instant only once every upstream has arrived",
        f"{CORE}/usecases/after.py",
        (("        if not fanin.complete(schedule.jobs):", "        if False:"),),
        (AFTER,),
    ),
    Mutant(
        "after-on",
        "an upstream end counts only if it ended as on asks",
        f"{CORE}/domain/after.py",
        (("    return status in _COUNTED[on]", "    return True"),),
        (AFTER,),
    ),
    Mutant(
        "after-within",
        "an instant's wait that lapses with upstreams missing records the run SKIPPED",
        f"{CORE}/usecases/dispatch.py",
        (("part.skipped_after += self._lapsed(waits, now)", "pass"),),
        (AFTER,),
    ),
    Mutant(
        "after-no-cascade",
        "re-runs and backfills of an upstream trigger its followers only when they cascade",
        f"{CORE}/usecases/after.py",
        (
            (
                "if run.trigger in (Trigger.RERUN, Trigger.BACKFILL) and not run.cascade:",
                "if False:",
            ),
        ),
        (AFTER,),
    ),
)


ARCHIVE_USECASE = "tests/unit/usecases/test_archive.py"
ARCHIVER = "tests/unit/test_archiver.py"
ARCHIVE_AUDIT = "tests/unit/test_archive_audit.py"
MUTANTS += (
    Mutant(
        "archive-idempotent-keys",
        "an archive object is named by the first and last version it holds: a batch handed"
        " over again writes the same objects, not the runs twice",
        f"{CORE}/domain/archive.py",
        (
            ("import gzip\n", "import gzip\nimport time\n"),
            (
                "        first, last = members[0].version, members[-1].version\n",
                "        first, last = members[0].version, str(time.time_ns())\n",
            ),
        ),
        (ARCHIVE_USECASE,),
    ),
    Mutant(
        "archive-owner-partition",
        "an archive object holds one owner's runs of one day, under that owner's prefix",
        f"{CORE}/domain/archive.py",
        (
            (
                "        return day_prefix(prefix, self.run.owner, self.day)\n",
                "        return day_prefix(prefix, 'shared', self.day)\n",
            ),
            (
                "group = (archived.where(prefix), archived.owner, archived.day)",
                "group = (archived.where(prefix), '', archived.day)",
            ),
        ),
        (ARCHIVE_USECASE,),
    ),
    Mutant(
        "archive-audit-owner-partition",
        "an archive object holds one owner's audit entries of one day, under that owner's"
        " prefix: two owners' entries never share an object",
        f"{CORE}/domain/archive.py",
        (
            (
                "        return audit_day_prefix(prefix, self.entry.owner, self.day)\n",
                "        return audit_day_prefix(prefix, 'shared', self.day)\n",
            ),
            (
                "group = (archived.where(prefix), archived.owner, archived.day)",
                "group = (archived.where(prefix), '', archived.day)",
            ),
        ),
        (ARCHIVE_AUDIT,),
    ),
    Mutant(
        "archive-audit-inserts-only",
        "the archiver's filter of the audit stream lets through the entries added only",
        f"{CORE}/aws/fanout.py",
        (('return [{"eventName": ["INSERT"]}]', 'return [{"eventName": ["INSERT", "REMOVE"]}]'),),
        (ARCHIVE_AUDIT,),
    ),
    Mutant(
        "archive-day-partition",
        "a run's versions are archived under its fire time's day",
        f"{CORE}/domain/archive.py",
        (
            (
                "    return run.scheduled_at.astimezone(UTC).date()\n",
                "    return date(2026, 11, 26)\n",
            ),
        ),
        (ARCHIVE_USECASE,),
    ),
    Mutant(
        "archive-latest-version",
        "readers keep each run's highest version (a run written again after it ended)",
        f"{CORE}/domain/archive.py",
        (
            (
                'if held is None or str(line["version"]) > str(held["version"]):',
                "if True:",
            ),
        ),
        (ARCHIVE_USECASE,),
    ),
    Mutant(
        "archive-final-only",
        "the archiver's stream filter lets through the writes of ended runs only",
        f"{CORE}/aws/fanout.py",
        (
            (
                'return [{"dynamodb": {"NewImage": {"status": {"S": FINAL}}}}]',
                'return [{"dynamodb": {"Keys": {"run_id": {"S": [{"anything-but": []}]}}}}]',
            ),
        ),
        (ARCHIVER,),
    ),
    Mutant(
        "archive-link-tenancy",
        "GET /archive lists and signs the caller's own prefix only",
        f"{CORE}/usecases/archive.py",
        (
            (
                "        where = at(self.prefix, owner, day)\n",
                '        where = f"{self.prefix}/"\n',
            ),
        ),
        (ARCHIVE_USECASE, "tests/unit/test_api_archive.py", ARCHIVE_AUDIT),
    ),
    Mutant(
        "archive-failed-records",
        "records whose object was not written are reported failed (the batch handed over again)",
        "functions/archiver/handler.py",
        (
            (
                "    failed = sorted({sequence[v] for v in done.failed} | set(unreadable),",
                "    failed = sorted(set(unreadable),",
            ),
        ),
        (ARCHIVER,),
    ),
    Mutant(
        "stream-readers-own-position",
        "chronoq local's runs stream keeps a record until every reader has had it",
        f"{CORE}/local/engine/tables.py",
        (
            (
                '"DELETE FROM stream WHERE seq <= (SELECT min(position) FROM stream_readers)"',
                '"DELETE FROM stream WHERE seq <= (SELECT max(position) FROM stream_readers)"',
            ),
        ),
        ("tests/unit/engine/test_restart.py",),
    ),
    Mutant(
        "stream-readers-move-past-other-tables",
        "chronoq local's streams share one log: a reader moves past the other tables' records,"
        " so a stream seldom written does not hold back the dropping of the others'",
        f"{CORE}/local/engine/streams.py",
        (("            last = max(last, head)\n", "            pass\n"),),
        ("tests/unit/engine/test_audit_stream.py",),
    ),
)


# --- many jobs at once: pause and resume by label (usecases/bulk.py) ---------------------------
BULK = "tests/unit/test_api_bulk.py"
MUTANTS += (
    Mutant(
        "bulk-label-selector",
        "a bulk pause or resume acts only on the jobs carrying every label given",
        f"{CORE}/usecases/bulk.py",
        (("lambda job: matches(job.labels, selectors)", "lambda job: True"),),
        (BULK,),
    ),
    Mutant(
        "bulk-selector-required",
        "a bulk pause or resume without a selector is refused, not applied to every job",
        f"{CORE}/usecases/bulk.py",
        (("    if not selectors:\n", "    if False:\n"),),
        (BULK,),
    ),
    Mutant(
        "bulk-skipped-said",
        "a job a bulk pause leaves as it was (already paused) is reported skipped, not paused",
        f"{CORE}/usecases/bulk.py",
        (("    if shown.state is JobState.PAUSED:\n", "    if False:\n"),),
        (BULK,),
    ),
    Mutant(
        "bulk-token-per-action",
        "a bulk request's page token continues that action and selector only",
        f"{CORE}/usecases/bulk.py",
        (('listing = f"jobs/{action.value}?"', 'listing = "jobs?"'),),
        (BULK,),
    ),
)


# --- run parameters and placeholders (docs/api/secrets.md, "Run parameters and placeholders") ---
PLACEHOLDERS = f"{CORE}/domain/placeholders.py"
PLACEHOLDER_TESTS = (
    "tests/unit/test_placeholders.py",
    "tests/unit/usecases/test_run_parameters.py",
)
MUTANTS += (
    Mutant(
        "placeholders-one-pass",
        "a value put in for a placeholder is never read for placeholders again (a parameter"
        " holding {{ secret.x }} never reads the secret)",
        f"{CORE}/domain/secrets.py",
        (
            (
                "    return EXPRESSION.sub(value, text)\n",
                "    once = EXPRESSION.sub(value, text)\n"
                "    return EXPRESSION.sub(value, once) if once != text else once\n",
            ),
        ),
        PLACEHOLDER_TESTS,
    ),
    Mutant(
        "placeholders-no-option",
        "a value put in a container's command cannot make an option",
        PLACEHOLDERS,
        (
            (
                '        if expanded.startswith("-") and not word.startswith("-"):\n',
                "        if False:\n",
            ),
        ),
        ("tests/unit/test_placeholders.py", "tests/unit/usecases/test_run_parameters.py"),
    ),
    Mutant(
        "placeholders-fixed-program",
        "a container's program (its first word) takes no placeholder",
        f"{CORE}/domain/targets.py",
        (
            (
                "        if not is_stored(info) and secrets.EXPRESSION.search(value[0]):\n",
                "        if False:\n",
            ),
        ),
        ("tests/unit/test_placeholders.py", "tests/unit/test_api_run_parameters.py"),
    ),
    Mutant(
        "placeholders-host-value",
        "a value put in a URL's host must be a host: it cannot add a path or credentials",
        PLACEHOLDERS,
        (("    if not _HOST_VALUE.match(value):\n", "    if False:\n"),),
        ("tests/unit/test_placeholders.py",),
    ),
    Mutant(
        "placeholders-url-encoded",
        "a value put in a URL's path or query is percent-encoded",
        PLACEHOLDERS,
        (('    encoded = quote(value, safe="")\n', "    encoded = value\n"),),
        ("tests/unit/test_placeholders.py",),
    ),
    Mutant(
        "placeholders-header-controls",
        "a value put in a header cannot break it (CR, LF, controls refused)",
        PLACEHOLDERS,
        (
            (
                '    if any((ord(c) < 0x20 and c != "\\t") or ord(c) == 0x7F for c in expanded):\n',
                "    if False:\n",
            ),
        ),
        ("tests/unit/test_placeholders.py", "tests/unit/usecases/test_secrets.py"),
    ),
    Mutant(
        "parameters-bound",
        "run parameters are bounded (8 KB of JSON): 422 naming parameters",
        f"{CORE}/domain/parameters.py",
        (("    if size > lim.MAX_PARAMETERS_BYTES:\n", "    if False:\n"),),
        (
            "tests/unit/test_placeholders.py",
            "tests/unit/test_api_run_parameters.py",
            "tests/unit/usecases/test_run_parameters.py",
        ),
    ),
    Mutant(
        "parameters-kept-on-run",
        "a triggered run keeps the parameters it runs with, the job's defaults overlaid",
        f"{CORE}/usecases/jobs.py",
        (
            (
                '        run = run.model_copy(update={"queued_at": now, "parameters": given})',
                '        run = run.model_copy(update={"queued_at": now})',
            ),
        ),
        ("tests/unit/usecases/test_run_parameters.py", "tests/unit/test_api_run_parameters.py"),
    ),
    Mutant(
        "parameters-reach-the-execution",
        "the worker starts a requested run with the parameters its record keeps",
        f"{CORE}/usecases/start.py",
        (("            parameters=run.parameters,", "            parameters=None,"),),
        ("tests/unit/usecases/test_run_parameters.py",),
    ),
    Mutant(
        "parameters-reach-the-runner",
        "the state machine hands a run's values to the runner",
        ASL,
        ((',\n          "values.$": "$.values"\n        }', "\n        }"),),
        ("tests/unit/test_contracts.py",),
    ),
)


def copy_tree(into: Path) -> Path:
    tree = into / "tree"
    shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(*LEFT_OUT), symlinks=True)
    return tree


def apply(tree: Path, mutant: Mutant) -> None:
    path = tree / mutant.path
    text = path.read_text()
    for old, new in mutant.edits:
        found = text.count(old)
        if found == 0 or (found > 1 and not mutant.every):
            raise SystemExit(
                f"{mutant.name}: {mutant.path} holds the text to remove {found} times (not once):"
                f" update tests/mutants.py\n{old}"
            )
        text = text.replace(old, new)
    path.write_text(text)


def failures(tree: Path, tests: tuple[str, ...]) -> tuple[list[str], str]:
    """The tests that fail on ``tree`` (and pytest's last lines)."""
    report = tree / "mutant-report.xml"
    environment = {
        **os.environ,
        # the copy's chronoq and tests first (the venv's install points at this tree)
        "PYTHONPATH": os.pathsep.join([str(tree / "layers" / "core"), str(tree)]),
        "PYTHONDONTWRITEBYTECODE": "1",
        "CHRONOQ_NO_SHRINK": "1",
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--junitxml={report}",
            *tests,
        ],
        cwd=tree,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    failed = []
    if report.exists():
        for case in ElementTree.parse(report).iter("testcase"):  # noqa: S314 - pytest wrote it
            if case.find("failure") is not None or case.find("error") is not None:
                failed.append(f"{case.get('classname')}::{case.get('name')}")
    tail = "\n".join(done.stdout.strip().splitlines()[-3:])
    return failed, tail


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="only these removals")
    parser.add_argument("--quick", action="store_true", help="only the tests each names")
    parser.add_argument("--list", action="store_true", help="print the list and stop")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.names or m.name in args.names]
    unknown = set(args.names) - {m.name for m in MUTANTS}
    if unknown:
        parser.error(f"no such removal: {', '.join(sorted(unknown))}")
    if args.list:
        for m in chosen:
            print(f"{m.name:30} {m.mechanism}\n{'':30} removed in {m.path}; {', '.join(m.tests)}")
        return 0
    survivors = []
    for m in chosen:
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix=f"chronoq-mutant-{m.name}-") as scratch:
            tree = copy_tree(Path(scratch))
            apply(tree, m)
            failed, tail = failures(tree, m.tests if args.quick else FAST)
        seconds = time.monotonic() - started
        print(f"\n{m.name}: {m.mechanism}  [{m.path}, {seconds:.0f} s]")
        if failed:
            for test in failed:
                print(f"  caught by {test}")
        else:
            survivors.append(m.name)
            print(f"  NOT CAUGHT ({tail.splitlines()[-1] if tail else 'no output'})")
    print(
        f"\n{len(chosen) - len(survivors)} of {len(chosen)} removals caught"
        + (f"; not caught: {', '.join(survivors)}" if survivors else "")
    )
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
