"""The least-privilege check's workload (tests/infra/least_privilege.py, ``drive``): one of
each kind of work, in process on moto, its calls recorded with the session's. Driven here,
beside the other tests, rather than in the check, which runs after them all
(tests/infra/test_least_privilege.py)."""

from __future__ import annotations

from chronoq.local.calls import RECORDER

from tests.infra import least_privilege as lp


def test_given_the_workload_when_driven_then_every_function_and_state_machine_made_calls() -> None:
    lp.drive_workload()

    made = {name for call in RECORDER.recorded for name in lp.roles_of(call)}
    assert made >= {"api", "dispatcher", "worker", "runner", "notifier", "standard", "express"}
    assert lp.workload_driven()
