"""Who makes each recorded call, in the synthesized stack's terms: each function's role, each
state machine's, the event source mappings' (which act with their function's role); and a
representative workload that makes every kind of call chronoq makes on a run's path and on
the API's routes, in process on moto."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from chronoq import heartbeat
from chronoq import resources as r
from chronoq.aws import fanout
from chronoq.aws.executor import StepFunctionsExecutor
from chronoq.domain import flow
from chronoq.domain import limits as lim
from chronoq.domain.runs import RunMessage, RunStatus
from chronoq.local.aws import LocalAWS
from chronoq.local.calls import CALLS_FILE_ENV, Call
from chronoq.local.usage import CONTAINER_EXECUTION, EVENT_SOURCES, STATE_MACHINE, stream_caller

from tests.builders import worker_event
from tests.infra.policies import Role, Statement, local_names, statements
from tests.infra.synthesis import Synthesis
from tests.integration.conftest import Harness
from tests.support import api_event, http_sink, wait_for

#: Grants no call of the session used, listed in the session's summary.
UNEXERCISED: list[str] = []
#: Container targets run on STANDARD only: those calls are the STANDARD state machine's.
STANDARD_ONLY = ("ecs:", "events:", "iam:")
#: What a job's target reaches: outside chronoq, allowed by the deployment's own lists (none
#: by default), never by the default stack; such calls are checked against the denials only.
TARGET_ACTIONS = {
    ("runner", "lambda:InvokeFunction"),
    ("runner", "s3:PutObject"),
    ("api", "s3:GetObject"),
    (STATE_MACHINE, "sqs:SendMessage"),
    (STATE_MACHINE, "sns:Publish"),
    (STATE_MACHINE, "events:PutEvents"),
    ("notifier", "ses:SendEmail"),
    ("notifier", "ses:SendRawEmail"),
}
OWN = "chronoq-local"
#: What a target may never reach whatever the lists say: chronoq's own functions, queues, topic
#: and buses. A recorded call of these on chronoq's own resources (a hostile test's, made with
#: the local denial taken away) must meet an explicit deny of the stack.
DENIED_TARGET_ACTIONS = {
    ("runner", "lambda:InvokeFunction"),
    (STATE_MACHINE, "sqs:SendMessage"),
    (STATE_MACHINE, "sns:Publish"),
    (STATE_MACHINE, "events:PutEvents"),
}


def _beside_calls(suffix: str) -> Path | None:
    """A file beside the session's calls file (tests/conftest.py), if there is one: what the
    tests leave there for the check, which ``make test`` runs in a pytest of its own after
    them."""
    calls = os.environ.get(CALLS_FILE_ENV)
    return Path(calls + suffix) if calls else None


def keep_roles(found: dict[str, Role]) -> None:
    """Leave the roles read from the session's synthesis for the check."""
    path = _beside_calls(".roles.json")
    if path is not None:
        path.write_text(
            json.dumps({name: [asdict(s) for s in role.statements] for name, role in found.items()})
        )


def kept_roles() -> dict[str, Role] | None:
    """The roles the session's infra tests read from their synthesis (None if they did not)."""
    path = _beside_calls(".roles.json")
    if path is None or not path.exists():
        return None
    return {
        name: Role(
            name,
            tuple(
                Statement(
                    s["allow"],
                    tuple(s["actions"]),
                    tuple(s["resources"]),
                    {
                        op: {k: tuple(v) for k, v in keys.items()}
                        for op, keys in s["conditions"].items()
                    },
                )
                for s in kept
            ),
        )
        for name, kept in json.loads(path.read_text()).items()
    }


#: Whether this process drove the workload.
_driven = False


def workload_driven() -> bool:
    """Whether the workload was driven in this session (in this process or another of it)."""
    mark = _beside_calls(".workload")
    return _driven or (mark is not None and mark.exists())


def drive_workload() -> None:
    """The workload (``drive``), in process on moto of its own, its calls recorded with the
    session's; marked as driven."""
    saved = dict(os.environ)
    aws = LocalAWS(shards=4, allow_host_commands=True).start()
    try:
        with http_sink() as sink:
            drive(Harness(aws), sink.url)
    finally:
        aws.stop()
        os.environ.clear()
        os.environ.update(saved)
    global _driven
    _driven = True
    mark = _beside_calls(".workload")
    if mark is not None:
        mark.touch()


def roles(synth: Synthesis) -> dict[str, Role]:
    """Each role of the stack a recorded call may be made with, by name: the functions',
    the state machines', and the containers' execution role (ECS's, as it starts a task)."""
    named = local_names(synth)
    stack = synth.stack
    found = {
        name: Role(name, tuple(statements(synth.role_statements(function), named)))
        for name, function in stack.functions.items()
    }
    for name, machine in (
        ("standard", stack.execution.state_machine),
        ("express", stack.execution.express_state_machine),
    ):
        found[name] = Role(name, tuple(statements(synth.role_statements(machine), named)))
    # ECS starting a container target's task (the secrets it names)
    execution_role = synth.statements(synth.arn(stack.containers.execution_role))
    found[CONTAINER_EXECUTION] = Role(CONTAINER_EXECUTION, tuple(statements(execution_role, named)))
    return found


def roles_of(call: Call) -> list[str]:
    """The roles ``call`` must be allowed by (none: not chronoq's own call)."""
    if call.caller in {f.name for f in r.FUNCTIONS}:
        return [call.caller]
    if call.caller == STATE_MACHINE:
        # both run the same states; only STANDARD runs containers
        return ["standard"] if call.action.startswith(STANDARD_ONLY) else ["standard", "express"]
    if call.caller == CONTAINER_EXECUTION:
        return [CONTAINER_EXECUTION]
    if call.caller == EVENT_SOURCES:
        # the queues' mappings feed the worker, the runs stream's the notifier
        return ["worker"] if call.action.startswith("sqs:") else ["notifier"]
    for reader in fanout.RUNS_STREAM_READERS:  # the runs stream's other readers' mappings
        if call.caller == stream_caller(reader.name):
            return [reader.name]
    return []


def is_target_call(call: Call) -> bool:
    return (call.caller, call.action) in TARGET_ACTIONS and OWN not in call.resource


def is_own_target_call(call: Call) -> bool:
    """A target's call on chronoq itself: what the stack's denials are for."""
    return (call.caller, call.action) in DENIED_TARGET_ACTIONS and OWN in call.resource


#: How long the attempt the workload cancels while it runs takes (long enough to be
#: cancelled while it runs on a loaded machine).
SLOW_SECONDS = 5


def drive(harness: Harness, sink_url: str, *, with_heartbeat: bool = True) -> None:
    """One of each kind of work: the API's routes, a dispatcher tick, runs of every runner
    target through the worker and both state machines (a container on STANDARD), a failure
    decided on and told to the topic, a cancel that stops a STANDARD execution, a forbid job's claim.

    ``with_heartbeat``: the deployment's heartbeat job ensured first (as a deployment does).
    Its runs fire every minute in real time: which of them the workload's clock jump leaves
    MISSED depends on the second the workload started in."""
    api = harness.api
    if with_heartbeat:
        assert harness.invoke(r.DISPATCHER_FUNCTION, {heartbeat.ENSURE: "ensure"})
    harness.invoke(r.DISPATCHER_FUNCTION, {"shards": list(range(4))})

    http = harness.create_job({"type": "http", "url": sink_url}, concurrency="forbid")
    large = harness.create_job(
        {"type": "python", "task": "chronoq.tasks:echo", "args": {"x": "y" * 40_000}}
    )
    failing = harness.create_job({"type": "python", "task": "chronoq.tasks:fail", "args": {}})
    container = harness.create_job(
        {"type": "container", "image": "busybox", "command": ["echo", "hi"]}
    )
    for job in (http, large, failing, container):
        harness.run(job, timeout=60)
    harness.notify()  # the failed run, to the topic

    job_id = large["id"]
    status, runs = api(api_event("list_runs", path=f"/jobs/{job_id}/runs", method="GET"))
    run_id = runs["runs"][0]["id"]
    for path in (
        "/jobs",
        f"/jobs/{job_id}",
        f"/runs/{run_id}",
        f"/runs/{run_id}/output",  # too large for the record: from S3
        f"/runs/{run_id}/logs",
        f"/runs?job_id={job_id}",
        f"/jobs/{job_id}/audit",  # (its trail: the audit table, read)
        "/notifications/secret",
        "/status",
        "/limits",
    ):
        status, _ = api(api_event("list_jobs", path=path, method="GET"))
        assert status == 200, path
    at = (datetime.now(UTC) + timedelta(days=2)).replace(microsecond=0).isoformat()
    schedule = {"schedule": {"type": "at", "at": at}}
    for method, path, body in (
        ("PATCH", f"/jobs/{job_id}", schedule),
        ("POST", f"/jobs/{job_id}/pause", None),
        ("POST", f"/jobs/{job_id}/resume", None),
    ):
        event = api_event("create_at_job", path=path, method=method, body=body)
        status, answer = api(event)
        assert status == 200, (path, answer)
    created = api_event("create_at_job")
    created["headers"]["idempotency-key"] = "least-privilege"
    status, _ = api(created)
    assert status == 201

    # a STANDARD run (a long timeout), cancelled while it runs: its execution is stopped
    slow = harness.create_job(
        {"type": "python", "task": "chronoq.tasks:sleep", "args": {"seconds": SLOW_SECONDS}},
        timeout_seconds=600,
    )
    status, run = api(api_event("get_job", path=f"/jobs/{slow['id']}/trigger", method="POST"))
    harness.deliver(run["id"])
    store = harness.wiring().runs.store
    wait_for(lambda: store.get_run(slow["id"], run["id"]).status is RunStatus.RUNNING)  # type: ignore[union-attr]
    # (its attempt under way: cancelled before the runner took it, it would keep no log)
    executor = harness.wiring().executor
    assert isinstance(executor, StepFunctionsExecutor)
    execution = executor.execution_arn(run["id"])
    wait_for(lambda: "RunTarget" in harness.states_entered(execution, run["id"]))
    status, _ = api(api_event("get_job", path=f"/runs/{run['id']}/cancel", method="POST"))
    assert status == 200
    # its attempt runs on after the stop (a Lambda invocation is not stopped): it ends, and
    # keeps its log, before the workload does, not during whatever the process does next
    artifacts = harness.wiring().artifacts
    wait_for(lambda: artifacts.read_logs(slow["id"], run["id"]))
    status, _ = api(api_event("get_job", path=f"/jobs/{http['id']}", method="DELETE"))
    assert status == 204
    _drive_secrets(harness, sink_url)
    _drive_run_features(harness, sink_url)
    _drive_silence(harness, sink_url)
    _drive_archive(harness)


def _drive_archive(harness: Harness) -> None:
    """The ended runs archived (the archiver's stream mapping and its writes), and one day of
    the archive listed and linked (the api function)."""
    harness.archive()
    day = datetime.now(UTC).date().isoformat()
    status, page = harness.api(api_event("list_jobs", path=f"/archive?day={day}", method="GET"))
    assert status == 200, page
    assert page["objects"], page


def _drive_secrets(harness: Harness, sink_url: str) -> None:
    """A secret kept, named by an http job's header, a container's variable and a webhook's
    header; the runs that resolve it (the runner, ECS, the notifier); the secret deleted."""
    api = harness.api
    put = api_event("get_job", path="/secrets/least", method="PUT", body={"value": "v4lue-lp"})
    assert api(put)[0] == 201
    webhook = {
        "on": ["SUCCEEDED"],
        "webhook": sink_url,
        "webhook_headers": {"X-K": {"secret": "least"}},
    }
    named = [
        harness.create_job(
            {"type": "http", "url": sink_url, "headers": {"X-K": "{{ secret.least }}"}},
            notify=webhook,
        ),
        harness.create_job(
            {
                "type": "container",
                "image": "busybox",
                "command": ["echo", "hi"],
                "environment": {"K": {"secret": "least"}},
            }
        ),
    ]
    for job in named:
        assert harness.run(job, timeout=60).status is RunStatus.SUCCEEDED
    harness.notify()  # the webhook, its header resolved
    assert api(api_event("list_jobs", path="/secrets", method="GET"))[0] == 200
    for job in named:
        path = f"/jobs/{job['id']}"
        assert api(api_event("get_job", path=path, method="DELETE"))[0] == 204
    assert api(api_event("get_job", path="/secrets/least", method="DELETE"))[0] == 204


def _drive_run_features(harness: Harness, sink_url: str) -> None:
    """Flow control (a run held back and sent again by the worker, its slot given back by the
    state machine), a paced backfill (its next run made by the worker; listed, read and
    cancelled), and re-runs of a run and of a job's range."""
    api = harness.api
    store = harness.wiring().store
    limits: dict[str, Any] = {"key": "least-privilege", "max_running": 1}
    flowing = [harness.create_job({"type": "http", "url": sink_url}, flow=limits) for _ in (1, 2)]
    sent = []
    for job in flowing:
        path = f"/jobs/{job['id']}/trigger"
        status, run = api(api_event("get_job", path=path, method="POST"))
        assert status == 202, run
        sent.append(harness.sent(run["id"]))
    harness.invoke(r.WORKER_FUNCTION, worker_event(*sent))
    first, held = sent

    def ended(message: RunMessage) -> bool:
        run = store.get_run(message.job_id, message.run_id)
        return run is not None and run.status is RunStatus.SUCCEEDED

    wait_for(lambda: ended(first), timeout=60)
    key = flow.item_key(flowing[0]["owner"], limits["key"])
    wait_for(lambda: store.get_flow(key).holders == {}, timeout=60)
    harness.invoke(r.WORKER_FUNCTION, worker_event(harness.sent(held.run_id)))
    wait_for(lambda: ended(held), timeout=60)

    paced = harness.create_job(
        {"type": "http", "url": sink_url},
        schedule={"type": "cron", "expression": "*/10 * * * *"},
        concurrency="forbid",  # one backfill run at a time: the worker makes the next
    )
    now = datetime.now(UTC).replace(microsecond=0)
    span = {"from": (now - timedelta(minutes=20)).isoformat(), "to": now.isoformat()}
    path = f"/jobs/{paced['id']}/backfill"
    status, backfill = api(api_event("backfill_job", path=path, body=span))
    assert status == 202, backfill
    (pending,) = [m for m in harness.bodies() if m["run_id"].endswith(backfill["id"])]
    harness.invoke(r.WORKER_FUNCTION, worker_event(RunMessage.model_validate(pending)))
    wait_for(lambda: ended(RunMessage.model_validate(pending)), timeout=60)
    harness.notify()  # its end counted on it (a transaction of the notifier)
    backfills = f"/jobs/{paced['id']}/backfills"
    for method, route in (
        ("GET", backfills),
        ("GET", f"{backfills}/{backfill['id']}"),
    ):
        status, answer = api(api_event("get_job", path=route, method=method))
        assert status == 200, (route, answer)

    # (while the backfill runs: the fire times it holds are read from it, in a batch)
    status, rerun = api(api_event("get_run", path=f"/runs/{first.run_id}/rerun", method="POST"))
    assert status == 202, rerun
    route = f"{backfills}/{backfill['id']}/cancel"
    status, answer = api(api_event("get_job", path=route, method="POST"))
    assert status == 200, (route, answer)
    harness.deliver(rerun["id"])
    wait_for(lambda: ended(harness.sent(rerun["id"])), timeout=60)
    harness.notify()  # the re-run's end counted down in its owner's usage
    ranged: dict[str, Any] = {
        "from": (now - timedelta(hours=1)).isoformat(),
        "to": (now + timedelta(hours=1)).isoformat(),
        "statuses": ["SUCCEEDED"],
    }
    path = f"/jobs/{held.job_id}/rerun"
    status, reruns = api(api_event("rerun_job", path=path, body=ranged))
    assert (status, len(reruns["runs"])) == (202, 1), reruns


def _drive_silence(harness: Harness, sink_url: str) -> None:
    """A job with ``expect`` (docs/api/notifications.md, "Silence"): its deadline passed, found by
    the dispatcher (the SILENT record told by the notifier); listed among the silent jobs; a success
    heard by the notifier (the silence ended, its RECOVERED record told, the next deadline written);
    its expect changed, the job paused and deleted."""
    api = harness.api
    job = harness.create_job(
        {"type": "http", "url": sink_url},
        expect={"success_within_seconds": lim.MIN_SUCCESS_WITHIN_SECONDS},
        notify={"webhook": sink_url},
    )
    harness.clock.advance(lim.MIN_SUCCESS_WITHIN_SECONDS + 3 * 60)
    harness.invoke(r.DISPATCHER_FUNCTION, {"shards": list(range(4))})
    harness.notify()  # SILENT
    status, silent = api(api_event("list_jobs", path="/jobs?silent=true", method="GET"))
    assert status == 200
    assert job["id"] in [j["id"] for j in silent["jobs"]], silent
    assert harness.run(job, timeout=60).status is RunStatus.SUCCEEDED
    harness.notify()  # the success
    harness.notify()  # RECOVERED
    path = f"/jobs/{job['id']}"
    changed = {"expect": {"success_within_seconds": 2 * lim.MIN_SUCCESS_WITHIN_SECONDS}}
    for method, route, body in (
        ("PATCH", path, changed),
        ("POST", f"{path}/pause", None),
        ("POST", f"{path}/resume", None),
    ):
        status, answer = api(api_event("create_at_job", path=route, method=method, body=body))
        assert status == 200, (route, answer)
    assert api(api_event("get_job", path=path, method="DELETE"))[0] == 204


def denied(calls: Iterable[Call], by_name: dict[str, Role]) -> list[str]:
    """Every call a role it is made with would refuse (a target's: only if a denial
    refuses it); and every target's call on chronoq itself that no denial refuses."""
    refused = []
    for call in sorted(calls, key=lambda c: (c.caller, c.action, c.resource)):
        for name in roles_of(call):
            role = by_name[name]
            denials = [s for s in role.statements if not s.allow and s.matches(call)]
            if is_own_target_call(call):
                if not denials:
                    refused.append(
                        f"{name}: {call.action} on {call.resource}: a target's call on chronoq"
                        " itself that no explicit deny refuses"
                    )
                continue
            ok = not denials if is_target_call(call) else role.allows(call)
            if not ok:
                refused.append(f"{name}: {call.action} on {call.resource} {dict(call.context)}")
    return refused


def unexercised(calls: Iterable[Call], by_name: dict[str, Role]) -> list[str]:
    """The grants of each role that no call used."""
    calls = list(calls)
    lines = []
    for name, role in sorted(by_name.items()):
        mine = [c for c in calls if name in roles_of(c)]
        left = role.grants() - role.used(mine)
        lines += [f"{name}: {action} on {resource}" for action, resource in sorted(left)]
    return lines
