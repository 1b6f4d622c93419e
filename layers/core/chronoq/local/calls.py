"""Every AWS call chronoq makes on the embedded AWS, as IAM sees it: who made it (a function, the
state machine, an event source mapping), the IAM action, the resource's ARN and the condition
keys chronoq's policies use. The usage meter (chronoq.local.usage) records each request here.

tests/infra/test_least_privilege.py checks every recorded call against the policies the
synthesized template gives the caller's role. Calls are kept in this process (``recorded``)
and, when the environment names a file (CALLS_FILE_ENV), appended to it once each, so that
the calls of chronoq local in a subprocess (the end-to-end tests) are kept too."""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

#: Where calls are appended (one JSON object a line), if set.
CALLS_FILE_ENV = "CHRONOQ_CALLS_FILE"


@dataclass(frozen=True)
class Call:
    caller: str
    action: str
    resource: str
    #: Condition keys and their values, as IAM would have them for this request.
    context: tuple[tuple[str, str], ...] = ()

    def line(self) -> str:
        return json.dumps(
            {
                "caller": self.caller,
                "action": self.action,
                "resource": self.resource,
                "context": dict(self.context),
            },
            sort_keys=True,
        )

    @classmethod
    def of_line(cls, line: str) -> Call:
        data = json.loads(line)
        return cls(data["caller"], data["action"], data["resource"], tuple(data["context"].items()))


@dataclass
class Recorder:
    recorded: set[Call] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, calls: Iterator[Call]) -> None:
        path = os.environ.get(CALLS_FILE_ENV)
        with self._lock:
            new = [c for c in calls if c not in self.recorded]
            self.recorded.update(new)
            if path and new:
                # one appending write: the processes of a test session share the file
                data = "".join(c.line() + "\n" for c in new).encode()
                fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    os.write(fd, data)
                finally:
                    os.close(fd)


#: The calls of this process.
RECORDER = Recorder()

#: SDK operations whose IAM action has another name.
_ACTIONS = {
    "lambda:Invoke": "lambda:InvokeFunction",
    "sqs:SendMessageBatch": "sqs:SendMessage",
    "sqs:DeleteMessageBatch": "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibilityBatch": "sqs:ChangeMessageVisibility",
    "stepfunctions:StartExecution": "states:StartExecution",
    "ses:SendRawEmail": "ses:SendRawEmail",
    "s3:ListObjectsV2": "s3:ListBucket",
}


#: The IAM action of each kind of item of a TransactWriteItems.
_TRANSACT_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}


def _deleted_keys(body: bytes) -> list[str]:
    """The keys a DeleteObjects request names (its XML body: ``<Key>…</Key>``, escaped)."""
    from html import unescape

    return [unescape(k.decode()) for k in re.findall(rb"<Key>([^<]*)</Key>", body)]


def calls_of(
    caller: str,
    operation: str,
    url: str,
    body: bytes,
    region: str,
    account: str,
) -> Iterator[Call]:
    """The IAM calls one request makes (a batch over several tables is a call on each)."""
    form = {k: v[0] for k, v in parse_qs(body.decode(errors="replace")).items()}
    return calls_in(caller, operation, _json(body), region, account, url, form, body)


def calls_in(
    caller: str,
    operation: str,
    document: Mapping[str, Any],
    region: str,
    account: str,
    url: str = "",
    form: Mapping[str, str] | None = None,
    body: bytes = b"",
) -> Iterator[Call]:
    """The IAM calls of one request given as its parameters (``document``: a JSON protocol's
    body, or the keyword arguments of a client's method), ``url`` and ``form`` for the
    services that carry them there."""
    service, _, name = operation.partition(":")
    action = _ACTIONS.get(operation, operation.replace("stepfunctions:", "states:"))
    action = action.replace("dynamodbstreams:", "dynamodb:")
    own = f"{region}:{account}"
    form = form or {}

    def call(resource: str, **context: str) -> Call:
        return Call(caller, action, resource, tuple(sorted(context.items())))

    if operation == "dynamodb:TransactWriteItems":
        # IAM authorizes each item of a transaction as the single-item action it is
        for entry in document.get("TransactItems", []):
            for kind, step in entry.items():
                arn = f"arn:aws:dynamodb:{own}:table/{step.get('TableName', '')}"
                yield Call(caller, f"dynamodb:{_TRANSACT_ACTIONS.get(kind, kind)}", arn)
    elif operation == "dynamodb:ExecuteStatement":
        # IAM authorizes a PartiQL statement as its kind (dynamodb:PartiQLInsert, ...) on the
        # table it names
        from chronoq.local.partiql import action_of

        found = action_of(str(document.get("Statement", "")))
        kind, table = found if found else ("PartiQLUnknown", "")
        yield Call(caller, f"dynamodb:{kind}", f"arn:aws:dynamodb:{own}:table/{table}")
    elif service == "dynamodb":
        tables = (
            [document["TableName"]]
            if "TableName" in document
            else list(document.get("RequestItems", {}))
        )
        for table in tables:
            arn = f"arn:aws:dynamodb:{own}:table/{table}"
            yield call(f"{arn}/index/{document['IndexName']}" if "IndexName" in document else arn)
    elif service == "dynamodbstreams":
        yield call(document.get("StreamArn") or _stream_of(document.get("ShardIterator")) or "*")
    elif service == "sqs":
        queue = document.get("QueueUrl", "").rstrip("/").rsplit("/", 1)[-1]
        yield call(f"arn:aws:sqs:{own}:{queue}")
    elif service == "stepfunctions":
        yield call(document.get("stateMachineArn") or document.get("executionArn") or "*")
    elif service == "lambda":
        path = unquote(urlsplit(url).path)
        function = str(document.get("FunctionName") or "") if not url else ""
        function = function or path.split("/functions/", 1)[-1].split("/", 1)[0]
        if not function.startswith("arn:"):
            function = f"arn:aws:lambda:{own}:function:{function}"
        yield call(function)
    elif service == "s3":
        if name == "ListObjectsV2":  # (IAM: ListBucket on the bucket, for the prefix listed)
            yield from _list_bucket(call, document, url)
            return
        if not url:  # (a client's arguments: chronoq local's engine)
            bucket = document.get("Bucket", "")
            if operation == "s3:ListObjectsV2":
                prefix = str(document.get("Prefix", ""))
                yield Call(
                    caller, "s3:ListBucket", f"arn:aws:s3:::{bucket}", (("s3:prefix", prefix),)
                )
            elif operation == "s3:DeleteObjects":
                for entry in document.get("Delete", {}).get("Objects", []):
                    yield Call(caller, "s3:DeleteObject", f"arn:aws:s3:::{bucket}/{entry['Key']}")
            else:
                yield call(f"arn:aws:s3:::{bucket}/{document.get('Key', '')}")
            return
        parts = urlsplit(url)
        host, path = parts.hostname or "", unquote(parts.path).lstrip("/")
        # path style (s3.amazonaws.com/bucket/key) or virtual host (bucket.s3.amazonaws.com/key)
        key = path if host.startswith("s3.") else f"{host.split('.s3.', 1)[0]}/{path}"
        bucket = key.split("/", 1)[0]
        if operation == "s3:ListObjectsV2":  # IAM: s3:ListBucket on the bucket, its prefix
            prefix = parse_qs(parts.query).get("prefix", [""])[0]
            yield Call(caller, "s3:ListBucket", f"arn:aws:s3:::{bucket}", (("s3:prefix", prefix),))
        elif operation == "s3:DeleteObjects":  # IAM: s3:DeleteObject on each object
            for name in _deleted_keys(body):
                yield Call(caller, "s3:DeleteObject", f"arn:aws:s3:::{bucket}/{name}")
        else:
            yield call(f"arn:aws:s3:::{key}")
    elif service == "sns":
        yield call(form.get("TopicArn", "*"))
    elif service == "ses":
        source = form.get("Source", "")
        yield call(f"arn:aws:ses:{own}:identity/{source}", **{"ses:FromAddress": source})
    elif service == "secretsmanager":
        yield call(document.get("SecretId", "*"))
    elif service == "ssm":
        # IAM authorizes a read of ``name:version`` (or of an ARN) on the parameter itself
        names = document.get("Names") or [document.get("Name", "")]
        for name in names:
            yield call(parameter_arn(str(name), region, account))
    elif service == "events":
        for entry in document.get("Entries", []):
            bus = entry.get("EventBusName") or "default"
            yield call(bus if bus.startswith("arn:") else f"arn:aws:events:{own}:event-bus/{bus}")
    elif service == "logs":
        yield call(
            f"arn:aws:logs:{own}:log-group:{document.get('logGroupName', '')}"
            f":log-stream:{document.get('logStreamName', '')}"
        )
    elif service == "ecs":
        yield from _ecs(call, name, document, own)


def _list_bucket(call: Any, document: Mapping[str, Any], url: str) -> Iterator[Call]:
    """ListObjectsV2 as IAM authorizes it: s3:ListBucket on the bucket, ``s3:prefix`` the
    prefix listed (from a client's arguments, or the request's address)."""
    if url:
        parts = urlsplit(url)
        host = parts.hostname or ""
        path = unquote(parts.path).strip("/")
        bucket = path.split("/", 1)[0] if host.startswith("s3.") else host.split(".s3.", 1)[0]
        prefix = parse_qs(parts.query).get("prefix", [""])[0]
    else:
        bucket, prefix = str(document.get("Bucket", "")), str(document.get("Prefix", ""))
    yield call(f"arn:aws:s3:::{bucket}", **{"s3:prefix": prefix})


def _ecs(call: Any, name: str, document: Mapping[str, Any], own: str) -> Iterator[Call]:
    if name == "RunTask":
        definition = str(document.get("taskDefinition", ""))
        if not definition.startswith("arn:"):
            definition = f"arn:aws:ecs:{own}:task-definition/{definition}"
        cluster = str(document.get("cluster", "default"))
        if not cluster.startswith("arn:"):
            cluster = f"arn:aws:ecs:{own}:cluster/{cluster}"
        yield call(definition, **{"ecs:cluster": cluster})
    elif name in ("StopTask", "DescribeTasks"):
        tasks = document.get("tasks") or [document.get("task", "")]
        for task in tasks:
            yield call(str(task))
    elif name == "RegisterTaskDefinition":
        yield call("*")
        for role in ("executionRoleArn", "taskRoleArn"):
            if document.get(role):
                yield Call(call("*").caller, "iam:PassRole", str(document[role]))
    else:
        yield call("*")


def parameter_arn(name: str, region: str, account: str) -> str:
    """The ARN of the SSM parameter a request names (by its name or its ARN, with a
    ``:version`` selector or without): ``arn:aws:ssm:<region>:<account>:parameter/<name>``."""
    if name.startswith("arn:"):
        prefix, _, rest = name.partition(":parameter")
        return f"{prefix}:parameter{rest.partition(':')[0]}"
    name = name.partition(":")[0]
    return f"arn:aws:ssm:{region}:{account}:parameter{'' if name.startswith('/') else '/'}{name}"


def _stream_of(iterator: Any) -> str | None:
    """The stream a shard iterator reads (moto's iterators name their stream's ARN)."""
    if not isinstance(iterator, str):
        return None
    found = iterator.split("|", 1)[0] if "|" in iterator else None
    return found if found and found.startswith("arn:") else None


def _json(data: bytes) -> dict[str, Any]:
    try:
        loaded = json.loads(data or b"{}")
    except ValueError:
        return {}
    return loaded if isinstance(loaded, dict) else {}


def kept(path: str) -> set[Call]:
    """The calls appended to ``path``."""
    if not os.path.exists(path):
        return set()
    with open(path, encoding="utf-8") as lines:
        return {Call.of_line(line) for line in lines if line.strip()}
