"""The SecretStore port on DynamoDB: each owner's secrets' names and versions on one item of
the jobs table (``secrets#<owner>``: what a run reads, one read), and per secret the ids of
the jobs using it (``uses#…``, a string set: adding or taking a job away needs no read).
A job coming to use secrets and a secret's removal are transactions over both, so that no
job can use a secret removed meanwhile."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from chronoq.aws.codecs import dump as _dump
from chronoq.aws.codecs import load as _load
from chronoq.aws.store._tables import Tables
from chronoq.aws.store._tables import jobs_table_key as _key
from chronoq.domain import keys
from chronoq.domain.secrets import SecretMeta
from chronoq.domain.time import format_instant

#: The secrets item's map of the owner's secrets (name -> version and times).
SECRETS = "secrets"


def _meta(name: str, data: dict[str, Any]) -> SecretMeta:
    return SecretMeta(
        name=name,
        version=int(data["version"]),
        created_at=datetime.fromisoformat(str(data["created_at"])),
        updated_at=datetime.fromisoformat(str(data["updated_at"])),
    )


class DynamoSecrets(Tables):
    def get_secrets(self, owner: str, consistent: bool = False) -> dict[str, SecretMeta]:
        item = self._db.get_item(
            TableName=self._jobs, Key=_key(keys.secrets_key(owner)), ConsistentRead=consistent
        ).get("Item")
        kept = _load(item).get(SECRETS, {}) if item else {}
        return {name: _meta(name, data) for name, data in sorted(kept.items())}

    def put_secret(self, owner: str, meta: SecretMeta, limit: int) -> bool:
        entry = {
            "version": meta.version,
            "created_at": format_instant(meta.created_at),
            "updated_at": format_instant(meta.updated_at),
        }
        names = {"#s": SECRETS, "#n": meta.name, "#v": "version"}
        try:
            # a new version of a kept secret: its entry, unless a later one is kept
            self._db.update_item(
                TableName=self._jobs,
                Key=_key(keys.secrets_key(owner)),
                UpdateExpression="SET #s.#n.#v = :v, #s.#n.updated_at = :u",
                ConditionExpression="attribute_exists(#s.#n) AND #s.#n.#v < :v",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=_dump({":v": meta.version, ":u": entry["updated_at"]}),
            )
            return True
        except self._db.exceptions.ConditionalCheckFailedException:
            pass
        if meta.name in self.get_secrets(owner, consistent=True):
            return True  # (a later version is kept)
        try:
            # a new secret: under the limit (the map made if it is the owner's first)
            self._db.update_item(
                TableName=self._jobs,
                Key=_key(keys.secrets_key(owner)),
                UpdateExpression="SET #s = if_not_exists(#s, :empty)",
                ExpressionAttributeNames={"#s": SECRETS},
                ExpressionAttributeValues={":empty": {"M": {}}},
            )
            self._db.update_item(
                TableName=self._jobs,
                Key=_key(keys.secrets_key(owner)),
                UpdateExpression="SET #s.#n = :e",
                ConditionExpression="attribute_exists(#s.#n) OR size(#s) < :limit",
                ExpressionAttributeNames={"#s": SECRETS, "#n": meta.name},
                ExpressionAttributeValues=_dump({":e": entry, ":limit": limit}),
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def remove_secret(self, owner: str, name: str) -> list[str]:
        items: list[dict[str, Any]] = [
            self._unused(keys.secret_uses_key(owner, name)),
            {
                "Update": {
                    "TableName": self._jobs,
                    "Key": _key(keys.secrets_key(owner)),
                    "UpdateExpression": "REMOVE #s.#n",
                    "ConditionExpression": "attribute_exists(#s.#n)",
                    "ExpressionAttributeNames": {"#s": SECRETS, "#n": name},
                }
            },
        ]
        failed = self._transact(items)
        if failed and 0 in failed:
            return self.secret_users(owner, name) or self.remove_secret(owner, name)
        return []  # (removed, or it was not there)

    def use_secrets(self, owner: str, job_id: str, names: Iterable[str]) -> str | None:
        wanted = sorted(set(names))
        if not wanted:
            return None
        attributes = {"#s": SECRETS} | {f"#n{i}": n for i, n in enumerate(wanted)}
        items: list[dict[str, Any]] = [
            {
                "ConditionCheck": {
                    "TableName": self._jobs,
                    "Key": _key(keys.secrets_key(owner)),
                    "ConditionExpression": " AND ".join(
                        f"attribute_exists(#s.#n{i})" for i in range(len(wanted))
                    ),
                    "ExpressionAttributeNames": attributes,
                }
            },
            *(self._use(keys.secret_uses_key(owner, name), job_id) for name in wanted),
        ]
        if self._transact(items):
            kept = self.get_secrets(owner, consistent=True)
            return next((n for n in wanted if n not in kept), wanted[0])
        return None

    def unuse_secrets(self, owner: str, job_id: str, names: Iterable[str]) -> None:
        for name in sorted(set(names)):
            self._unuse(keys.secret_uses_key(owner, name), job_id)

    def secret_users(self, owner: str, name: str) -> list[str]:
        return self._users(keys.secret_uses_key(owner, name))
