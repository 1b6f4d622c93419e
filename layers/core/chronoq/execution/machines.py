"""The run state machines, STANDARD and EXPRESS: both are built from the one ASL file
(chronoq.resources.STATE_MACHINE_FILE), the EXPRESS one through its batches (execution.batches).
The CDK stack and the local runtime define them from here."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources as _pkg_resources
from pathlib import Path

from chronoq import resources as r
from chronoq.execution.batches import in_batches


@dataclass(frozen=True)
class StateMachine:
    """A run state machine; both kinds are built from the one ASL file."""

    id: str = r.STATE_MACHINE_ID
    express: bool = False
    substitutions: tuple[str, ...] = field(
        default=(
            r.ASL_RUNS_TABLE,
            r.ASL_JOBS_TABLE,
            r.ASL_RUNNER_FUNCTION,
            r.ASL_CONTAINER_CLUSTER,
            r.ASL_CONTAINER_SUBNETS,
            r.ASL_CONTAINER_SECURITY_GROUP,
        )
    )

    @property
    def path(self) -> Path:
        return Path(str(_pkg_resources.files("chronoq") / r.STATE_MACHINE_FILE))

    def text(self) -> str:
        """The ASL text, placeholders unfilled: the file, or the batches made from it."""
        text = self.path.read_text()
        if not self.express:
            return text
        return json.dumps(in_batches(json.loads(text)), indent=2) + "\n"

    def definition(self, values: dict[str, str]) -> str:
        """The ASL text with every ``${Placeholder}`` replaced by ``values``."""
        text = self.text()
        for name in self.substitutions:
            text = text.replace("${" + name + "}", values[name])
        return text


STATE_MACHINE = StateMachine()
EXPRESS_STATE_MACHINE = StateMachine(id=r.EXPRESS_STATE_MACHINE_ID, express=True)
