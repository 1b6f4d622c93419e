"""The Step Functions service integrations the run state machine uses, as task handlers for
chronoq's ASL interpreter: each calls the service through a boto3-shaped client and answers,
or fails, as Step Functions' optimized integration does (its result shape, its error names:
``Lambda.<Code>``, ``DynamoDB.<Code>``, ``SQS.<Code>``, ...)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from chronoq.local.emulation.ecs import lower_camel, upper_camel
from chronoq.local.engine.interpreter import TaskContext, TaskFailed, TaskHandler

Clients = Callable[[str], Any]

#: The fields of a Lambda Invoke answer that lambda:invoke passes on.
INVOKE_FIELDS = ("ExecutedVersion", "FunctionError", "LogResult", "Payload", "StatusCode")
#: What Step Functions names itself as the starter of the ECS tasks it runs.
STARTED_BY = "AWS Step Functions"
#: How often ecs:runTask.sync looks whether its task has stopped.
ECS_POLL_SECONDS = 0.1

_SERVICE_NAMES = {
    "lambda": ("Lambda", "AWSLambda"),
    "dynamodb": ("DynamoDB", "AmazonDynamoDBv2"),
    "sqs": ("SQS", "AmazonSQS"),
    "sns": ("SNS", "AmazonSNS"),
    "events": ("EventBridge", "AmazonEventBridge"),
    "ecs": ("ECS", "AmazonECS"),
}


def _snake(action: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in action)


def _action(resource: str) -> str:
    """``arn:aws:states:::dynamodb:updateItem`` -> ``updateItem``."""
    return resource.rsplit(":", 1)[-1].split(".", 1)[0]


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def service_failure(service: str, error: ClientError) -> TaskFailed:
    """A service's error as its integration names it: ``<Service>.<Code>``, with the
    message and the call's details as the cause."""
    prefix, long_name = _SERVICE_NAMES[service]
    code = error.response.get("Error", {}).get("Code", "Unknown")
    message = error.response.get("Error", {}).get("Message", "")
    metadata = error.response.get("ResponseMetadata", {})
    if service == "sns" and not code.endswith("Exception"):
        code += "Exception"
    details = "; ".join(
        [
            f"Service: {long_name}",
            f"Status Code: {metadata.get('HTTPStatusCode', 400)}",
            f"Error Code: {code}",
            f"Request ID: {metadata.get('RequestId', '')}",
            "Proxy: null",
        ]
    )
    return TaskFailed(f"{prefix}.{code}", f"{message} ({details})")


class _Client:
    """One service's client, got from ``clients`` when first needed."""

    def __init__(self, clients: Clients, service: str) -> None:
        self._clients = clients
        self._service = service
        self._client: Any = None

    def call(self, action: str, **parameters: Any) -> dict[str, Any]:
        if self._client is None:
            self._client = self._clients(self._service)
        try:
            answer = dict(getattr(self._client, action)(**parameters))
        except ClientError as error:
            raise service_failure(self._service, error) from error
        answer.pop("ResponseMetadata", None)
        return answer


def lambda_invoke(clients: Clients) -> TaskHandler:
    """``lambda:invoke``: Invoke, the answer with its Payload parsed; a function error fails
    the task with the payload's errorType (its JSON the cause)."""
    client = _Client(clients, "lambda")

    def invoke(resource: str, parameters: dict[str, Any], context: TaskContext) -> Any:
        request = dict(parameters)
        if "Payload" in request:
            request["Payload"] = _payload(request["Payload"])
        answer = client.call("invoke", **request)
        payload = _read(answer.get("Payload"))
        if answer.get("FunctionError"):
            error = payload.get("errorType") if isinstance(payload, dict) else None
            raise TaskFailed(str(error or "Exception"), _json(payload))
        answer["Payload"] = payload
        return {key: answer[key] for key in INVOKE_FIELDS if key in answer}

    return invoke


def _payload(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        try:
            json.loads(value)
        except ValueError:
            return _json(value).encode()
        return value.encode()
    return _json({} if value is None else value).encode()


def _read(payload: Any) -> Any:
    if payload is None:
        return None
    data = payload.read() if hasattr(payload, "read") else payload
    text = data.decode() if isinstance(data, bytes) else str(data)
    try:
        return json.loads(text)
    except ValueError:
        return text


def dynamodb(clients: Clients) -> TaskHandler:
    """``dynamodb:getItem``, ``putItem``, ``updateItem``, ``deleteItem``: the API's answer;
    a failed condition fails the task with DynamoDB.ConditionalCheckFailedException."""
    client = _Client(clients, "dynamodb")
    actions = {"getItem", "putItem", "updateItem", "deleteItem"}

    def call(resource: str, parameters: dict[str, Any], context: TaskContext) -> Any:
        action = _action(resource)
        if action not in actions:
            raise TaskFailed("States.Runtime", f"unsupported DynamoDB integration {resource}")
        return client.call(_snake(action), **parameters)

    return call


def sqs_send_message(clients: Clients) -> TaskHandler:
    """``sqs:sendMessage``: a MessageBody that is not a string is sent as its JSON."""
    client = _Client(clients, "sqs")

    def send(resource: str, parameters: dict[str, Any], context: TaskContext) -> Any:
        request = dict(parameters)
        if "MessageBody" in request and not isinstance(request["MessageBody"], str):
            request["MessageBody"] = _json(request["MessageBody"])
        return client.call("send_message", **request)

    return send


def sns_publish(clients: Clients) -> TaskHandler:
    """``sns:publish``: a Message that is not a string is published as its JSON."""
    client = _Client(clients, "sns")

    def publish(resource: str, parameters: dict[str, Any], context: TaskContext) -> Any:
        request = dict(parameters)
        if "Message" in request and not isinstance(request["Message"], str):
            request["Message"] = _json(request["Message"])
        return client.call("publish", **request)

    return publish


def events_put_events(clients: Clients) -> TaskHandler:
    """``events:putEvents``: each entry's Detail as JSON, the state machine's and the
    execution's ARNs added to its Resources; a failed entry fails the task
    (EventBridge.FailedEntry)."""
    client = _Client(clients, "events")

    def put(resource: str, parameters: dict[str, Any], context: TaskContext) -> Any:
        entries = []
        for entry in parameters.get("Entries", []):
            entry = dict(entry)
            if "Detail" in entry and not isinstance(entry["Detail"], str):
                entry["Detail"] = _json(entry["Detail"])
            own = [context.state_machine_arn, context.execution_arn]
            entry["Resources"] = [*entry.get("Resources", []), *own]
            entries.append(entry)
        answer = client.call("put_events", **{**parameters, "Entries": entries})
        if answer.get("FailedEntryCount", 0) > 0:
            raise TaskFailed("EventBridge.FailedEntry", _json(answer))
        return answer

    return put


def ecs_run_task_sync(clients: Clients, poll_seconds: float = ECS_POLL_SECONDS) -> TaskHandler:
    """``ecs:runTask.sync``: RunTask, then DescribeTasks until the task has STOPPED (a
    heartbeat each look); the stopped task is the result, whatever its containers' exit
    codes (the run state machine's next state reads them, as on the embedded AWS); a task
    whose execution is stopped or that timed out is stopped."""
    client = _Client(clients, "ecs")

    def run(resource: str, parameters: dict[str, Any], context: TaskContext) -> Any:
        request = lower_camel(parameters)
        request.setdefault("startedBy", STARTED_BY)
        answer = client.call("run_task", **request)
        if answer.get("failures") or not answer.get("tasks"):
            raise TaskFailed("ECS.AmazonECSException", _json(upper_camel(answer)))
        task = answer["tasks"][0]
        if not resource.endswith(".sync"):
            return upper_camel(answer)
        while task.get("lastStatus") != "STOPPED":
            if context.stopped():
                reason = "Step Functions execution stopped"
                client.call(
                    "stop_task", cluster=task["clusterArn"], task=task["taskArn"], reason=reason
                )
                return None
            context.heartbeat()
            context.sleep(poll_seconds)
            described = client.call(
                "describe_tasks", cluster=task["clusterArn"], tasks=[task["taskArn"]]
            )
            task = described["tasks"][0]
        return upper_camel(task)

    return run


def aws_task_handlers(client: Clients) -> dict[str, TaskHandler]:
    """The integrations of the run state machine, by resource ARN prefix, over the clients
    ``client(service)`` answers."""
    ecs = ecs_run_task_sync(client)
    return {
        "arn:aws:states:::lambda:invoke": lambda_invoke(client),
        "arn:aws:states:::dynamodb:": dynamodb(client),
        "arn:aws:states:::sqs:sendMessage": sqs_send_message(client),
        "arn:aws:states:::sns:publish": sns_publish(client),
        "arn:aws:states:::events:putEvents": events_put_events(client),
        "arn:aws:states:::ecs:runTask": ecs,
    }
