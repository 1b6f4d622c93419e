"""Secrets: where owners' secrets' values live (SSM Parameter Store SecureStrings under the
stack's own path, ``/chronoq/<stack name>/secrets/<owner>/<name>``: chronoq.aws.secrets), and
the rights on them, each function only what it does there.

- The api keeps and deletes values (PutParameter, DeleteParameter); it never reads one.
- The runner and the notifier read them, each a ``name:version`` (GetParameter).
- ECS reads those a container target names (its task definition's ``secrets``) with the
  containers' execution role as it starts the task (GetParameters).

No KMS grant: SecureStrings are encrypted with the account's AWS managed key for Parameter
Store, and "the AWS managed key for Parameter Store (aws/ssm) grants Decrypt permission to all
IAM principals in the AWS account" (AWS Systems Manager User Guide, "Restricting decryption of
SecureString parameter values",
https://docs.aws.amazon.com/systems-manager/latest/userguide/ps-restrict-decryption.html).
What bounds reading a value is therefore the ssm: grants here, scoped to the path.

Nothing is created here: a parameter is made by the API when an owner puts a secret."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from chronoq import resources as r
from constructs import Construct

from .rules import grant_wildcards

#: Why the grants end in a wildcard.
PATH_REASON = (
    "Owners' secrets are parameters the API makes under the stack's own path, one per owner"
    " and name (/chronoq/<stack name>/secrets/<owner>/<name>): the grant names that path only."
)


def secrets_path(scope: Construct) -> str:
    """The stack's path of owners' secrets (CHRONOQ_SECRETS_PATH)."""
    return r.secrets_path(Stack.of(scope).stack_name)


def secrets_arn(scope: Construct) -> str:
    """Every parameter under the stack's path of owners' secrets."""
    return Stack.of(scope).format_arn(
        service="ssm",
        resource="parameter",
        resource_name=f"{secrets_path(scope).lstrip('/')}/*",
        arn_format=ArnFormat.SLASH_RESOURCE_NAME,
    )


def grant_secrets(scope: Construct, grantee: iam.IGrantable, actions: Sequence[str]) -> None:
    """``actions`` (``ssm:…``) on the owners' secrets of ``scope``'s stack, and nothing else."""
    grant_wildcards(grantee, actions, [secrets_arn(scope)], PATH_REASON)
