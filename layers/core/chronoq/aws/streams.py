"""Which records of the runs table's stream reach the notifier: the event source mapping's
filter patterns, defined once for the CDK stack (which deploys them) and chronoq local (which
applies them with ``matches``).

A record passes when it ends a run (the run written with a final status, or changed into one
from another status) and someone is to hear of it: its status is one the SNS topic is told
about, or the run is marked ``notify``: its job has a notify block, or the run's end is
counted (a backfill's run, a re-run: usecases.progress counts it, and marks it counted).
Everything else (most successful runs, later changes of an ended run such as the notes of its
notifications, a counted run's mark) never invokes the notifier.

A record also passes when a run that held flow slots ends (its ``slots``, noted as it started,
name flow items): the notifier wakes the runs parked on them (see chronoq.usecases.wake). Every
run that starts is counted among its owner's runs in flight, which its ``slots`` names too: so
every started run's end passes; and a run of a job with ``expect`` names its job's expectation
there besides (a success of it moves the expectation on: chronoq.usecases.silence); and a run
of a job that ``after`` jobs follow names them there (``after#...``: the notifier notes its end
in their fan-ins, chronoq.usecases.after). (The filter matches the text's start: whichever of these
tokens comes first.)

A silence's record passes as it is written (INSERT, status SILENT or RECOVERED): the notifier
tells the job's owner (see chronoq.domain.silence). Its later changes (the notes of its
notifications) do not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from chronoq.aws.codecs import COUNTED, run_from_item
from chronoq.domain.after import SLOT as AFTER
from chronoq.domain.keys import EXPECT, FLOW
from chronoq.domain.runs import TERMINAL_STATUSES, RunStatus
from chronoq.domain.silence import SilenceStatus
from chronoq.usecases.ports import RunEnd

#: Every status a run ends in, as the stream shows it.
FINAL = sorted(s.value for s in TERMINAL_STATUSES)
#: The statuses of a silence's records (written once each: only their INSERT passes).
SILENCE = sorted(s.value for s in SilenceStatus)


def notifier_filters(topic_statuses: Iterable[RunStatus]) -> list[dict[str, Any]]:
    """The filter patterns (Lambda event filtering, any one passes a record) for a deployment
    whose topic hears of ``topic_statuses``: at most five (what Lambda allows)."""
    audience = sorted(s.value for s in topic_statuses)
    images: list[dict[str, Any]] = [{"status": {"S": audience}}]
    if audience != FINAL:  # (otherwise every run that ends passes already)
        images.append({"status": {"S": FINAL}, "notify": {"BOOL": [True]}})
    patterns: list[dict[str, Any]] = []
    for n, image in enumerate(images):
        # (a silence's record with the first: no pattern more, of the five Lambda allows)
        inserted = image if n else {"status": {"S": sorted(audience + SILENCE)}}
        patterns.append({"eventName": ["INSERT"], "dynamodb": {"NewImage": inserted}})
        patterns.append(
            {
                "eventName": ["MODIFY"],
                "dynamodb": {
                    "NewImage": image,
                    "OldImage": {"status": {"S": [{"anything-but": FINAL}]}},
                },
            }
        )
    if audience != FINAL:  # (otherwise it passes already)
        patterns.append(SLOTS_GIVEN_BACK)
    return patterns


#: The end of a run that held flow slots, or of a run of a job with ``expect`` (a run's first
#: write, MarkRunning, notes its slots: it ends by a change of its record, never by its first
#: write).
SLOTS_GIVEN_BACK: dict[str, Any] = {
    "eventName": ["MODIFY"],
    "dynamodb": {
        "NewImage": {
            "status": {"S": FINAL},
            "slots": {"S": [{"prefix": FLOW}, {"prefix": EXPECT}, {"prefix": AFTER}]},
        },
        "OldImage": {"status": {"S": [{"anything-but": FINAL}]}},
    },
}


def matches(pattern: Mapping[str, Any], event: Mapping[str, Any]) -> bool:
    """Does ``event`` match ``pattern``, as Lambda event filtering decides? (The part of its
    syntax the patterns above use: nested fields, lists of values, ``anything-but``; a field
    the event lacks matches nothing.)"""
    for name, rule in pattern.items():
        if name not in event:
            return False
        value = event[name]
        if isinstance(rule, Mapping):
            if not isinstance(value, Mapping) or not matches(rule, value):
                return False
        elif not any(_allows(choice, value) for choice in rule):
            return False
    return True


def _allows(choice: Any, value: Any) -> bool:
    if isinstance(choice, Mapping):
        ((operator, operand),) = choice.items()
        if operator == "anything-but":
            return isinstance(value, str | int | float) and value not in operand
        if operator == "prefix":
            return isinstance(value, str) and value.startswith(operand)
        raise ValueError(f"filter rule {operator!r} is not supported here")
    return type(choice) is type(value) and bool(choice == value)


def uncounted_end(image: Mapping[str, Any] | None) -> RunEnd | None:
    """The end a record's new image shows of a backfill's run or a re-run, if it is not
    counted yet (None: any other record)."""
    if not image or image.get(COUNTED) != {"BOOL": False}:
        return None
    if image.get("status", {}).get("S") not in FINAL:
        return None
    return RunEnd.of(run_from_item(image))
