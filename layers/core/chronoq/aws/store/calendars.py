"""The CalendarStore port on DynamoDB: each owner's calendars on one item of the jobs table
(``calendars#<owner>``, a map: name -> rules (JSON text), version and times; one read lists
them), and per calendar the ids of the jobs using it (``calendar-uses#…``, a string set).
A job coming to use a calendar and a calendar's removal are transactions over both, so that
no job can use a calendar removed meanwhile."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from chronoq.aws.codecs import dump as _dump
from chronoq.aws.codecs import load as _load
from chronoq.aws.store._tables import Tables
from chronoq.aws.store._tables import jobs_table_key as _key
from chronoq.domain import keys
from chronoq.domain.base import STORED
from chronoq.domain.calendars import CalendarMeta, CalendarRules
from chronoq.domain.time import format_instant

#: The calendars item's map of the owner's calendars.
CALENDARS = "calendars"


def _meta(name: str, data: dict[str, Any]) -> CalendarMeta:
    return CalendarMeta(
        name=name,
        rules=CalendarRules.model_validate_json(str(data["rules"]), context=STORED),
        version=int(data["version"]),
        created_at=datetime.fromisoformat(str(data["created_at"])),
        updated_at=datetime.fromisoformat(str(data["updated_at"])),
    )


class DynamoCalendars(Tables):
    def get_calendars(self, owner: str, consistent: bool = False) -> dict[str, CalendarMeta]:
        item = self._db.get_item(
            TableName=self._jobs, Key=_key(keys.calendars_key(owner)), ConsistentRead=consistent
        ).get("Item")
        kept = _load(item).get(CALENDARS, {}) if item else {}
        return {name: _meta(name, data) for name, data in sorted(kept.items())}

    def put_calendar(self, owner: str, meta: CalendarMeta, limit: int) -> bool:
        entry = {
            "rules": meta.rules.model_dump_json(),
            "version": meta.version,
            "created_at": format_instant(meta.created_at),
            "updated_at": format_instant(meta.updated_at),
        }
        names = {"#c": CALENDARS, "#n": meta.name}
        if meta.version == 1:
            # a new calendar: under the limit (the map made if it is the owner's first)
            self._db.update_item(
                TableName=self._jobs,
                Key=_key(keys.calendars_key(owner)),
                UpdateExpression="SET #c = if_not_exists(#c, :empty)",
                ExpressionAttributeNames={"#c": CALENDARS},
                ExpressionAttributeValues={":empty": {"M": {}}},
            )
            condition = "attribute_not_exists(#c.#n) AND size(#c) < :limit"
            values = {":e": entry, ":limit": limit}
        else:
            condition = "#c.#n.version = :before"
            values = {":e": entry, ":before": meta.version - 1}
        try:
            self._db.update_item(
                TableName=self._jobs,
                Key=_key(keys.calendars_key(owner)),
                UpdateExpression="SET #c.#n = :e",
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=_dump(values),
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def remove_calendar(self, owner: str, name: str) -> list[str]:
        items: list[dict[str, Any]] = [
            self._unused(keys.calendar_uses_key(owner, name)),
            {
                "Update": {
                    "TableName": self._jobs,
                    "Key": _key(keys.calendars_key(owner)),
                    "UpdateExpression": "REMOVE #c.#n",
                    "ConditionExpression": "attribute_exists(#c.#n)",
                    "ExpressionAttributeNames": {"#c": CALENDARS, "#n": name},
                }
            },
        ]
        failed = self._transact(items)
        if failed and 0 in failed:
            return self.calendar_users(owner, name) or self.remove_calendar(owner, name)
        return []  # (removed, or it was not there)

    def use_calendar(self, owner: str, job_id: str, name: str) -> bool:
        items: list[dict[str, Any]] = [
            {
                "ConditionCheck": {
                    "TableName": self._jobs,
                    "Key": _key(keys.calendars_key(owner)),
                    "ConditionExpression": "attribute_exists(#c.#n)",
                    "ExpressionAttributeNames": {"#c": CALENDARS, "#n": name},
                }
            },
            self._use(keys.calendar_uses_key(owner, name), job_id),
        ]
        return not self._transact(items)

    def unuse_calendar(self, owner: str, job_id: str, name: str) -> None:
        self._unuse(keys.calendar_uses_key(owner, name), job_id)

    def calendar_users(self, owner: str, name: str) -> list[str]:
        return self._users(keys.calendar_uses_key(owner, name))
