"""ECS as Step Functions calls it: the network the local state machines name for container
tasks, ECS's parameter names both ways, and moto's interpreter made to translate them. The
names are chronoq.local.engine's too: nothing here imports moto until the patch is
installed."""

from __future__ import annotations

from typing import Any

#: The network the local state machine names for container tasks; they run in moto's default
#: VPC, looked up when the first task runs (creating it costs more than starting the rest).
LOCAL_SUBNET = "subnet-chronoq-local"
LOCAL_SECURITY_GROUP = "sg-chronoq-local"


def default_network(ec2: Any) -> dict[str, list[str]]:
    """The embedded AWS's default VPC, where container tasks run (the ASL's values name
    LOCAL_SUBNET and LOCAL_SECURITY_GROUP locally): its first subnet and default group."""
    return {
        "subnets": [ec2.describe_subnets()["Subnets"][0]["SubnetId"]],
        "securityGroups": [
            ec2.describe_security_groups(GroupNames=["default"])["SecurityGroups"][0]["GroupId"]
        ],
    }


def lower_camel(value: Any) -> Any:
    """ECS's parameters as its API names them (Step Functions passes them PascalCase)."""
    if isinstance(value, dict):
        return {k[:1].lower() + k[1:]: lower_camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [lower_camel(v) for v in value]
    return value


def upper_camel(value: Any) -> Any:
    """ECS's answer as Step Functions hands it on (PascalCase; instants as text)."""
    if isinstance(value, dict):
        return {k[:1].upper() + k[1:]: upper_camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [upper_camel(v) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def pass_ecs_parameters_as_the_api_names_them() -> None:
    """Step Functions takes ECS parameters in PascalCase (``Cluster``), calls the API with its
    own names (``cluster``) and answers with the stopped task in PascalCase (``ExitCode``);
    moto's interpreter passes the names through unchanged both ways, which the SDK refuses.
    Translate them as Step Functions does."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service_ecs as ecs,
    )

    def client(resource_runtime_part: Any, state_credentials: Any) -> Any:
        return ecs.boto_client_for(  # type: ignore[attr-defined]
            region=resource_runtime_part.region,
            service="ecs",
            state_credentials=state_credentials,
        )

    def _eval_service_task(
        self: Any,
        env: Any,
        resource_runtime_part: Any,
        normalised_parameters: dict[str, Any],
        state_credentials: Any,
    ) -> None:
        parameters = lower_camel(normalised_parameters)
        network = parameters.get("networkConfiguration", {}).get("awsvpcConfiguration", {})
        if network.get("subnets") == [LOCAL_SUBNET]:
            ec2: Any = ecs.boto_client_for(  # type: ignore[attr-defined]
                region=resource_runtime_part.region, service="ec2", state_credentials=None
            )
            network.update(default_network(ec2))
        answer = client(resource_runtime_part, state_credentials).run_task(**parameters)
        if answer.get("failures") or not answer.get("tasks"):
            raise RuntimeError(f"ECS RunTask failed: {answer.get('failures')}")
        env.stack.append(upper_camel({"Tasks": answer["tasks"]}))

    def _build_sync_resolver(
        self: Any,
        env: Any,
        resource_runtime_part: Any,
        normalised_parameters: dict[str, Any],
        state_credentials: Any,
    ) -> Any:
        submitted = env.stack.pop()["Tasks"][0]
        ecs_client = client(resource_runtime_part, state_credentials)

        def resolve() -> Any:
            task = ecs_client.describe_tasks(
                cluster=submitted["ClusterArn"], tasks=[submitted["TaskArn"]]
            )["tasks"][0]
            return upper_camel(task) if task["lastStatus"] == "STOPPED" else None

        def stop() -> None:
            ecs_client.stop_task(
                cluster=submitted["ClusterArn"],
                task=submitted["TaskArn"],
                reason="Step Functions execution stopped",
            )

        resolve.stop = stop  # type: ignore[attr-defined]
        return resolve

    original_eval_sync = ecs.StateTaskServiceEcs._eval_sync

    def _eval_sync(self: Any, env: Any, sync_resolver: Any, **kwargs: Any) -> Any:
        """As Step Functions does, stop the task when the execution is stopped or the wait
        for it fails (a missed heartbeat, say)."""
        try:
            outcome = original_eval_sync(self, env=env, sync_resolver=sync_resolver, **kwargs)
        except Exception:
            if hasattr(sync_resolver, "stop"):
                sync_resolver.stop()
            raise
        if not env.is_running() and hasattr(sync_resolver, "stop"):
            sync_resolver.stop()
        return outcome

    ecs.StateTaskServiceEcs._eval_service_task = _eval_service_task  # type: ignore[method-assign]
    ecs.StateTaskServiceEcs._build_sync_resolver = _build_sync_resolver  # type: ignore[method-assign]
    ecs.StateTaskServiceEcs._eval_sync = _eval_sync  # type: ignore[method-assign,assignment]
