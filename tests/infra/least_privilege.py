"""Who makes each recorded call, in the synthesized stack's terms: each function's role, each
state machine's, the event source mappings' (which act with their function's role); and a
representative workload that makes every kind of call chronoq makes on a run's path and on
the API's routes, in process on moto."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from chronoq import heartbeat
from chronoq import resources as r
from chronoq.domain.runs import RunStatus
from chronoq.local.calls import Call
from chronoq.local.usage import EVENT_SOURCES, STATE_MACHINE

from tests.infra.policies import Role, local_names, statements
from tests.infra.synthesis import Synthesis
from tests.integration.conftest import Harness
from tests.support import api_event, wait_for

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


def roles(synth: Synthesis) -> dict[str, Role]:
    """Each role of the stack a recorded call may be made with, by name."""
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
    return found


def roles_of(call: Call) -> list[str]:
    """The roles ``call`` must be allowed by (none: not chronoq's own call)."""
    if call.caller in {f.name for f in r.FUNCTIONS}:
        return [call.caller]
    if call.caller == STATE_MACHINE:
        # both run the same states; only STANDARD runs containers
        return ["standard"] if call.action.startswith(STANDARD_ONLY) else ["standard", "express"]
    if call.caller == EVENT_SOURCES:
        # the queues' mappings feed the worker, the runs stream's the notifier
        return ["worker"] if call.action.startswith("sqs:") else ["notifier"]
    return []


def is_target_call(call: Call) -> bool:
    return (call.caller, call.action) in TARGET_ACTIONS and OWN not in call.resource


def is_own_target_call(call: Call) -> bool:
    """A target's call on chronoq itself: what the stack's denials are for."""
    return (call.caller, call.action) in DENIED_TARGET_ACTIONS and OWN in call.resource


def drive(harness: Harness, sink_url: str) -> None:
    """One of each kind of work: the API's routes, a dispatcher tick, runs of every runner
    target through the worker and both state machines (a container on STANDARD), a failure
    decided on and told to the topic, a cancel that stops a STANDARD execution, a forbid job's claim."""
    api = harness.api
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
        "/notifications/secret",
        "/status",
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
        {"type": "python", "task": "chronoq.tasks:sleep", "args": {"seconds": 20}},
        timeout_seconds=600,
    )
    status, run = api(api_event("get_job", path=f"/jobs/{slow['id']}/trigger", method="POST"))
    harness.deliver(run["id"])
    store = harness.wiring().runs.store
    wait_for(lambda: store.get_run(slow["id"], run["id"]).status is RunStatus.RUNNING)  # type: ignore[union-attr]
    status, _ = api(api_event("get_job", path=f"/runs/{run['id']}/cancel", method="POST"))
    assert status == 200
    status, _ = api(api_event("get_job", path=f"/jobs/{http['id']}", method="DELETE"))
    assert status == 204


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
