"""The SSRF guard at call time, in the runner and the notifier as chronoq runs them: a host is
checked by the addresses it resolves to when the call is made (a name can resolve elsewhere
than when the job was created), the call goes to the checked address, and no redirect is
followed. The sink listens on loopback, so the guard refuses it unless its network is
allowed."""

from __future__ import annotations

from typing import Any

from chronoq import resources as r
from chronoq.domain.runs import RunStatus

from tests.integration.conftest import Harness
from tests.support import Sink, api_event, wait_for


def guard_on(harness: Harness, allowed: str = "") -> None:
    harness.aws.configure(r.ENV_BLOCK_PRIVATE_TARGETS, "true")
    harness.aws.configure(r.ENV_ALLOWED_TARGET_NETWORKS, allowed)


def named(sink: Sink, path: str) -> str:
    """The sink's URL by a name that resolves to loopback, not by its address."""
    return sink.url.replace("127.0.0.1", "localhost") + path


def test_given_a_name_that_resolves_to_loopback_when_the_guard_is_on_at_call_time_then_the_attempt_fails_unsent(
    harness: Harness, sink: Sink
) -> None:
    job = harness.create_job({"type": "http", "url": named(sink, "/internal")})  # (guard off)
    guard_on(harness)

    run = harness.run(job)

    assert run.status is RunStatus.FAILED
    assert "refused" in (run.error or "")
    assert "network policy" in (run.error or "")
    assert sink.hits_to("/internal") == []
    lines = harness.api(api_event("get_run", path=f"/runs/{run.id}/logs"))[1]["lines"]
    assert any("refused" in line for line in lines)


def test_given_the_sinks_network_allowed_when_the_guard_is_on_then_the_call_goes_to_the_checked_address(
    harness: Harness, sink: Sink
) -> None:
    guard_on(harness, allowed="127.0.0.0/8")
    job = harness.create_job(
        {"type": "http", "url": sink.url + "/allowed?x=1", "headers": {"X-Foo": "bar"}}
    )

    run = harness.run(job)

    assert run.status is RunStatus.SUCCEEDED, run.error
    (hit,) = sink.hits_to("/allowed?x=1")  # (the query goes along)
    assert hit.headers["Host"] == sink.url.removeprefix("http://")
    assert hit.headers["X-Foo"] == "bar"
    assert hit.headers["X-Chronoq-Run-Id"] == run.id


def test_given_a_redirect_to_loopback_when_the_guard_is_on_then_it_is_not_followed(
    harness: Harness, sink: Sink
) -> None:
    guard_on(harness, allowed="127.0.0.0/8")
    sink.status = 302
    job = harness.create_job({"type": "http", "url": sink.url + "/moved"})

    run = harness.run(job)

    assert run.status is RunStatus.FAILED
    assert len(sink.hits) == 1


def test_given_a_webhook_that_resolves_to_loopback_when_the_guard_is_on_then_it_is_refused_and_noted(
    harness: Harness, sink: Sink
) -> None:
    target: dict[str, Any] = {"type": "python", "task": "chronoq.tasks:echo", "args": {}}
    job = harness.create_job(target, notify={"on": ["SUCCEEDED"], "webhook": named(sink, "/hook")})
    guard_on(harness)

    run = harness.run(job)
    harness.notify()

    assert run.status is RunStatus.SUCCEEDED
    outcome = wait_for(
        lambda: harness.api(api_event("get_run", path=f"/runs/{run.id}"))[1]["notifications"]
    )
    assert outcome["webhook"].startswith("failed (refused:")
    assert sink.hits_to("/hook") == []
