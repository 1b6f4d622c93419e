"""The roles the least-privilege check reads from the synthesized stack: one for each function
and each state machine, and the containers' execution role (ECS's, as it starts a task), read
once from the session's synthesis and left for the check (tests/infra/test_least_privilege.py),
which runs after every other test."""

from __future__ import annotations

from chronoq.local.usage import CONTAINER_EXECUTION

from tests.infra import least_privilege as lp
from tests.infra.synthesis import Synthesis


def test_given_the_stack_when_its_roles_are_read_then_each_function_and_state_machine_has_its_grants(
    synth: Synthesis,
) -> None:
    found = lp.roles(synth)

    assert set(found) == {*synth.stack.functions, "standard", "express", CONTAINER_EXECUTION}
    for name, role in found.items():
        assert any(s.allow for s in role.statements), name
    lp.keep_roles(found)
    assert lp.kept_roles() in (found, None)  # (None: no calls file, nothing kept)
