"""Step Functions adapter: start the run state machine, one execution per run id."""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING

from chronoq.execution.contract import ExecutionInput

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient


class StepFunctionsExecutor:
    def __init__(self, client: SFNClient, state_machine_arn: str) -> None:
        self._sfn = client
        self._arn = state_machine_arn

    def start(self, run_id: str, execution_input: ExecutionInput) -> bool:
        """Start the execution named ``run_id``. Starting it again with the same input is a
        no-op (Step Functions answers with the same execution); False when an execution of
        that name already exists with other input."""
        try:
            self._sfn.start_execution(
                stateMachineArn=self._arn,
                name=run_id,
                input=json.dumps(execution_input.document(), sort_keys=True),
            )
        except self._sfn.exceptions.ExecutionAlreadyExists:
            return False
        return True

    def execution_arn(self, run_id: str) -> str:
        return f"{self._arn.replace(':stateMachine:', ':execution:', 1)}:{run_id}"

    def stop(self, run_id: str, reason: str) -> None:
        """Stop the run's execution (and with it the attempt); no-op if it is not running."""
        with contextlib.suppress(self._sfn.exceptions.ExecutionDoesNotExist):
            self._sfn.stop_execution(
                executionArn=self.execution_arn(run_id), error="Cancelled", cause=reason[:32000]
            )
