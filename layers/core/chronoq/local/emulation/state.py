"""What the patches of moto read, set by chronoq.local.aws.LocalAWS when it starts (the patches
are installed into moto's classes once per process; moto serves one embedded AWS at a
time)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chronoq.local.clock import WALL, LocalClock

if TYPE_CHECKING:
    from chronoq.local.usage import Meter

#: The usage meter requests go through (chronoq local sets it when it starts).
METER: list[Meter | None] = [None]
#: The prefix of chronoq's own resources, which its roles may not reach as targets (see
#: chronoq.local.denials; chronoq local sets it when it starts).
OWN_PREFIX: list[str | None] = [None]
#: The clock the state machine's Wait states and state entry times, and SQS's delays and
#: timeouts, follow (chronoq local sets its own when it starts: see chronoq.local.clock).
CLOCK: list[LocalClock] = [WALL]

#: How container targets run locally (set by LocalAWS.start): HOST_PROCESSES (only with
#: ``chronoq local --allow-host-commands``), IN_DOCKER (a Docker daemon answers), or NOWHERE:
#: each attempt fails with containers.NOT_ENABLED.
HOST_PROCESSES = "host"
IN_DOCKER = "docker"
NOWHERE = "none"
CONTAINERS = [NOWHERE]
#: The docker program, resolved once from chronoq's own PATH when chronoq local starts (an
#: absolute path: a job's environment never decides which program runs).
DOCKER: list[str | None] = [None]
