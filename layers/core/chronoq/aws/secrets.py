"""The SecretValues port on SSM Parameter Store: each secret a SecureString parameter
``<path>/<owner>/<name>`` (encrypted with the account's ``aws/ssm`` key), its version SSM's
own (moved on by each put; a run reads ``name:version``).

Why Parameter Store and not Secrets Manager: a standard parameter costs nothing to keep and
its reads at standard throughput cost nothing either, where a Secrets Manager secret costs
$0.40 a month and $0.05 per 10,000 reads; SecureStrings are encrypted with KMS the same way.
Its limits (10,000 standard parameters per account and region, 4 KB a value, 40 reads a
second shared by the account at standard throughput) are why values are cached by version
(usecases.secrets.Resolver) and why each owner may keep a bounded number of secrets.
chronoq local's engine answers the same calls from its own storage."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from chronoq.domain.owners import owner_segment
from chronoq.domain.secrets import SecretUnavailable

_GONE = {"ParameterNotFound", "ParameterVersionNotFound"}
_DENIED = {"AccessDeniedException", "AccessDenied", "KMSAccessDeniedException"}

__all__ = ["SsmSecretValues", "owner_segment"]


class SsmSecretValues:
    """``client``: makes the SSM client, on first use (a function that meets no secret
    never makes one)."""

    def __init__(self, client: Callable[[], Any], path: str) -> None:
        self._client = client
        self._path = path.rstrip("/")

    @property
    def _ssm(self) -> Any:
        return self._client()

    def parameter(self, owner: str, name: str) -> str:
        """The parameter holding ``owner``'s secret ``name``."""
        return f"{self._path}/{owner_segment(owner)}/{name}"

    def put_value(self, owner: str, name: str, value: str) -> int:
        answer = self._ssm.put_parameter(
            Name=self.parameter(owner, name),
            Value=value,
            Type="SecureString",
            Overwrite=True,
            Tier="Standard",
        )
        return int(answer["Version"])

    def get_value(self, owner: str, name: str, version: int) -> str:
        try:
            answer = self._ssm.get_parameter(
                Name=f"{self.parameter(owner, name)}:{version}", WithDecryption=True
            )
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            if code in _GONE:
                raise SecretUnavailable(name, "it no longer exists") from None
            if code in _DENIED:
                raise SecretUnavailable(name, "access to it was denied") from None
            reason = f"it could not be read ({code})"
            raise SecretUnavailable(name, reason, retryable=True) from None
        return str(answer["Parameter"]["Value"])

    def delete_value(self, owner: str, name: str) -> None:
        try:
            self._ssm.delete_parameter(Name=self.parameter(owner, name))
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ParameterNotFound":
                raise
