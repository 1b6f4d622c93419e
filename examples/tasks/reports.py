# mytasks/reports.py
from typing import Any

from chronoq.tasks import PermanentError, RunContext, task


@task
def nightly(args: dict[str, Any], context: RunContext) -> dict[str, Any]:
    # context.job_id, context.run_id, context.attempt, context.scheduled_at,
    # context.environment
    if "team" not in args:
        raise PermanentError("args.team is required")  # trying again cannot help
    context.logger.info("counting rows of %s", args["team"])  # a line of the run's log
    return {"rows": 1234}
