"""Step Functions adapter: start a run's execution, on the EXPRESS state machine when the run
fits it, else on the STANDARD one (one execution per run id)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from chronoq.execution import batches
from chronoq.execution.contract import ExecutionInput

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient


class StepFunctionsExecutor:
    def __init__(
        self, client: SFNClient, state_machine_arn: str, express_arn: str | None = None
    ) -> None:
        """``express_arn`` None: an executor that only stops executions (the API's)."""
        self._sfn = client
        self._arn = state_machine_arn
        self._express_arn = express_arn

    def start(self, run_id: str, execution_input: ExecutionInput) -> bool:
        """Start the run's execution: on EXPRESS when it fits (see ``start_batch``), else on
        STANDARD, named ``run_id``: starting it again with the same input is a no-op (Step
        Functions answers with the same execution) and False answers an execution of that
        name that already exists with other input."""
        if execution_input.fits_express():
            self.start_batch([execution_input])
            return True
        try:
            self._sfn.start_execution(
                stateMachineArn=self._arn,
                name=run_id,
                input=json.dumps(execution_input.document(), sort_keys=True),
            )
        except self._sfn.exceptions.ExecutionAlreadyExists:
            return False
        return True

    def start_batch(self, inputs: list[ExecutionInput]) -> None:
        """One EXPRESS execution per batch of runs, as many runs per execution as its input
        size allows. EXPRESS starts anew every time (and may even run an execution twice):
        the first state, a conditional write, lets one execution of a run through."""
        if self._express_arn is None:
            raise ValueError("this executor was given no EXPRESS state machine")
        for batch in batches.chunks([i.document() for i in inputs]):
            first = batch[0]["run_id"]
            self._sfn.start_execution(
                stateMachineArn=self._express_arn,
                name=f"{first}-{len(batch)}"[:80],
                input=json.dumps({batches.RUNS: batch}, sort_keys=True),
            )

    def execution_arn(self, run_id: str) -> str:
        """The STANDARD execution of the run (an EXPRESS one has no ARN known in advance)."""
        return f"{self._arn.replace(':stateMachine:', ':execution:', 1)}:{run_id}"

    def stop(self, run_id: str, reason: str) -> bool:
        """Stop the run's STANDARD execution (and with it the attempt); no-op if it is not
        running. An EXPRESS execution cannot be stopped: it finds the run ended at its next
        conditional write and ends without another attempt. True: an execution was stopped
        (stopping one that has ended is a no-op for Step Functions too)."""
        try:
            self._sfn.stop_execution(
                executionArn=self.execution_arn(run_id), error="Cancelled", cause=reason[:32000]
            )
        except self._sfn.exceptions.ExecutionDoesNotExist:
            return False
        return True
