"""Schedule benchmark: what finding a cron schedule's next fire time costs, on an ordinary day
and right after a zone's clocks change.

For ``* * * * *`` (the densest schedule) in a few zones, from an instant of an ordinary day and
from instants just after an offset change (clocks forward; clocks back, where the local hour
repeats; the days skipped when Kiritimati and Kwajalein crossed the date line):

- milliseconds per next fire time, asked from 100 instants spread over the three hours from
  there (the instants of clock changes cached as a running process has them, and cold: that
  cache emptied before each question);
- milliseconds for a 100-fire preview from there.

Each figure is the best of five, in the process's CPU time (others' load on the machine does
not count). The last line of output is one JSON object
(``next_fire_ms``: by case, warm), for tools.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime, timedelta

from chronoq.domain import schedules
from chronoq.domain.schedules import CronSchedule, fire_times, next_fire, zone_named

#: (zone, what the instant is, the instant). The instants after a change are 30 seconds after
#: it (checked below).
CASES = (
    ("Europe/London", "ordinary day", datetime(2030, 3, 24, 1, 0, 30, tzinfo=UTC)),
    ("Europe/London", "after clocks forward", datetime(2030, 3, 31, 1, 0, 30, tzinfo=UTC)),
    ("Europe/London", "after clocks back", datetime(2030, 10, 27, 1, 0, 30, tzinfo=UTC)),
    ("Pacific/Kiritimati", "after a skipped day", datetime(1994, 12, 31, 10, 0, 30, tzinfo=UTC)),
    ("Pacific/Kwajalein", "after a skipped day", datetime(1993, 8, 21, 12, 0, 30, tzinfo=UTC)),
)
FIRES = 100
SPREAD = timedelta(hours=3)


def next_fire_ms(schedule: CronSchedule, after: datetime, rounds: int, cold: bool) -> float:
    """Milliseconds per next fire time, from FIRES instants spread over SPREAD from ``after``
    (``rounds`` times; the best of five)."""
    instants = [after + SPREAD * i / FIRES for i in range(FIRES)]
    best = float("inf")
    for _ in range(5):
        started = time.process_time()
        for _ in range(rounds):
            for instant in instants:
                if cold:
                    schedules._change.cache_clear()
                next_fire(schedule, instant)
        best = min(best, time.process_time() - started)
    return best / (rounds * FIRES) * 1000


def preview_ms(schedule: CronSchedule, after: datetime) -> float:
    """Milliseconds for the FIRES fire times from ``after`` (the best of five)."""
    best = float("inf")
    for _ in range(5):
        started = time.process_time()
        assert len(fire_times(schedule, after, FIRES)) == FIRES
        best = min(best, time.process_time() - started)
    return best * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20, help="rounds of each measure")
    args = parser.parse_args()
    figures: dict[str, float] = {}
    print(
        f"'* * * * *': milliseconds per next fire time from {FIRES} instants over the next "
        f"{SPREAD.seconds // 3600} hours (warm / cold), and a {FIRES}-fire preview"
    )
    for zone_name, what, after in CASES:
        zone = zone_named(zone_name)
        changed = (after - timedelta(seconds=31)).astimezone(zone).utcoffset()
        if what != "ordinary day":
            assert changed != after.astimezone(zone).utcoffset(), (zone_name, after)
        schedule = CronSchedule.model_validate(
            {"type": "cron", "expression": "* * * * *", "timezone": zone_name}
        )
        warm = next_fire_ms(schedule, after, args.rounds, cold=False)
        cold = next_fire_ms(schedule, after, args.rounds, cold=True)
        figures[f"{zone_name} {what}"] = warm
        print(
            f"  {zone_name:<19} {what:<21} from {after:%Y-%m-%d %H:%M:%S}Z: "
            f"{warm:.4f} / {cold:.4f} ms; preview {preview_ms(schedule, after):.2f} ms"
        )
    ordinary = figures["Europe/London ordinary day"]
    worst = max(figures.values())
    print(f"  the slowest case (warm) is {worst / ordinary:.2f} x the ordinary day")
    print(json.dumps({"next_fire_ms": {k: round(v, 4) for k, v in figures.items()}}))


if __name__ == "__main__":
    main()
