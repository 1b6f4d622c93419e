"""Least privilege, proven by the calls: every AWS call each function and state machine makes
(recorded by chronoq local's meter: a representative workload in process on moto,
tests/infra/test_workload.py, and every call the session's integration and end-to-end tests
made before this module, which runs last) is allowed by the policies the synthesized template
gives its role; the grants no call used are listed in the session's summary."""

from __future__ import annotations

import os

import pytest
from chronoq.local.calls import CALLS_FILE_ENV, RECORDER, Call, kept

from tests.infra import least_privilege as lp
from tests.infra.policies import Role


@pytest.fixture(scope="module")
def calls() -> set[Call]:
    """The workload's calls and the session's (the workload driven here unless the session
    drove it already: tests/infra/test_workload.py)."""
    if not lp.workload_driven():
        lp.drive_workload()
    return RECORDER.recorded | kept(os.environ.get(CALLS_FILE_ENV, ""))


@pytest.fixture(scope="module")
def roles(request: pytest.FixtureRequest) -> dict[str, Role]:
    """The roles the session's synthesis gives (read by tests/infra/test_roles.py), or read
    from a synthesis here."""
    return lp.kept_roles() or lp.roles(request.getfixturevalue("synth"))


def test_given_every_recorded_call_when_checked_against_its_roles_policies_then_each_is_allowed(
    calls: set[Call], roles: dict[str, Role]
) -> None:
    refused = lp.denied(calls, roles)

    assert not refused, "calls the deployed roles would refuse:\n" + "\n".join(refused)
    lp.UNEXERCISED[:] = lp.unexercised(calls, roles)


def test_given_any_one_grant_a_call_needs_when_removed_then_the_check_refuses_that_call(
    calls: set[Call], roles: dict[str, Role]
) -> None:
    """The check depends on every grant it finds used: without any one of them, some recorded
    call is refused (so a grant removed from the stack fails the suite)."""
    for name, role in roles.items():
        mine = [
            c
            for c in calls
            if name in lp.roles_of(c) and not (lp.is_target_call(c) or lp.is_own_target_call(c))
        ]
        for grant in sorted(role.used(mine)):
            action, resource = grant
            without = Role(
                name,
                tuple(
                    type(s)(
                        s.allow,
                        tuple(a for a in s.actions if not (a == action and s.allow)) or ("none:x",),
                        s.resources,
                        s.conditions,
                    )
                    if s.allow and resource in s.resources and len(s.resources) == 1
                    else s
                    for s in role.statements
                ),
            )
            if without == role:
                continue  # a grant among several resources of one statement: kept below
            assert lp.denied(mine, {**roles, name: without}), (name, grant)
