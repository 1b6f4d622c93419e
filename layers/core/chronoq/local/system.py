"""``chronoq local``: the whole system in one process."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from chronoq import heartbeat
from chronoq import resources as r
from chronoq.aws import clients, fanout
from chronoq.aws.queues import SqsQueues
from chronoq.aws.store import DynamoStore
from chronoq.domain import ids
from chronoq.domain import limits as lim
from chronoq.domain.limits import Limits
from chronoq.local import endpoint, instance, persist, tokens
from chronoq.local.aws import ENGINE_LOCAL, LocalAWS, function_name
from chronoq.local.backup import ENGINE_DIR, running
from chronoq.local.clock import LocalClock
from chronoq.local.drivers import QueuePoller, StreamPoller, Ticker, queue_pollers
from chronoq.local.engine import recovery
from chronoq.local.engine.objects import LINK_PATH, LinkRefused
from chronoq.local.foreground import Foreground
from chronoq.local.gateway import serve
from chronoq.local.usage import stream_caller, uncounted
from chronoq.usecases.names import claim_existing_names
from chronoq.usecases.timeindex import TimeIndex

logger = logging.getLogger(__name__)

#: How often expired items are deleted.
UPKEEP_SECONDS = 5.0


@dataclass
class LocalSystem:
    host: str = "127.0.0.1"
    port: int = 8080
    data_dir: Path = Path(".chronoq")
    shards: int = r.DEFAULT_SHARDS
    #: Dispatcher invocations per tick, each for its own group of shards (as deployed).
    dispatch_groups: int = r.DEFAULT_DISPATCH_GROUPS
    #: The deployment's own task modules (comma-separated).
    task_modules: str = ""
    #: The final statuses of the runs published to the SNS topic (comma-separated).
    topic_statuses: str = ",".join(r.DEFAULT_TOPIC_STATUSES)
    tick_seconds: float = 1.0
    #: The SSRF guard (off by default locally; ``--block-private-targets``) and the networks
    #: it lets through (comma-separated CIDRs).
    block_private_targets: bool = False
    allowed_target_networks: str = ""
    #: Jobs one owner may have.
    max_jobs_per_owner: int = lim.DEFAULT_MAX_JOBS_PER_OWNER
    #: What each owner's backfills and re-runs may hold at once.
    owner_limits: Limits = field(default_factory=Limits)
    #: Container targets as host processes (``--allow-host-commands``; otherwise in Docker
    #: when a daemon answers, else refused).
    allow_host_commands: bool = False
    #: Concurrent worker invocations per run queue (AWS: each queue's SQS event source
    #: mapping starts with five batches at a time, and scales them with the queue).
    pollers: int = 5
    #: Keep nothing in ``data_dir`` but the token secret: every start is a fresh system.
    in_memory: bool = False
    #: Where chronoq's own tables, queues and state machines run: ``local`` (the engine
    #: built for one machine, chronoq.local.engine) or ``moto`` (the embedded AWS itself).
    engine: str = ENGINE_LOCAL
    #: The port the embedded AWS is served on (0: a free one; None: not served; taken: a
    #: free one instead). See chronoq.local.endpoint.
    aws_port: int | None = endpoint.DEFAULT_PORT
    #: Run the heartbeat job, as a deployment does (chronoq.heartbeat): created at start if
    #: missing; ``--no-heartbeat`` leaves it out (or, kept from an earlier start, as it is).
    heartbeat: bool = True
    #: Seconds ``stop`` waits for the system's threads, all together.
    stop_seconds: float = 1.0
    #: How long the archiver's batches are gathered (AWS: ARCHIVER_BATCHING_WINDOW_SECONDS).
    archive_window_seconds: float = r.LOCAL_ARCHIVER_BATCHING_WINDOW_SECONDS
    #: What time it is for the whole system (the wall clock unless a test gives its own:
    #: see chronoq.local.clock).
    clock: LocalClock = field(default_factory=LocalClock)
    #: API requests first: background work makes way while they are answered (see
    #: chronoq.local.foreground).
    foreground: Foreground = field(default_factory=Foreground)
    aws: LocalAWS = field(init=False)
    ticker: Ticker = field(init=False)
    _halt: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _server: Any = None
    _aws_server: Any = None
    #: What the system holds while it runs (its data directory's engine).
    _held: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    #: What ``local.json`` in the data directory says of it while it runs (see
    #: chronoq.local.instance).
    _announced: instance.Running | None = None

    def _warm(self, first: bool) -> None:
        """Idle containers started with the system (``first``: one of each function a run
        needs, before the system answers; else the rest of what a burst needs, in the
        background: a worker per poller, a runner for each run of a worker's batch)."""
        assert self.aws.runtime is not None
        counts = (
            ((r.API_FUNCTION, 1), (r.WORKER_FUNCTION, 1), (r.RUNNER_FUNCTION, 1))
            if first
            else (
                (r.WORKER_FUNCTION, self.pollers * len(r.PRIORITIES) - 1),
                (r.RUNNER_FUNCTION, r.WORKER_BATCH_SIZE - 1),
            )
        )
        for function, count in counts:
            if self._halt.is_set():
                return
            self.aws.runtime.warm(function_name(function), count)

    def _store(self) -> DynamoStore:
        env = self.aws.env
        return DynamoStore(
            clients.dynamodb(),
            env[r.ENV_JOBS_TABLE],
            env[r.ENV_RUNS_TABLE],
            env[r.ENV_SCHEDULE_TABLE],
        )

    def _recover_engine(self) -> None:
        """A start on the engine's kept state: the runs whose execution the last stop took
        with it (see chronoq.local.engine.recovery)."""
        assert self.aws.services is not None
        store = self._store()
        queues = SqsQueues(clients.sqs(), self.aws.queue_urls)
        with uncounted():
            returned = self.aws.services.queues.return_in_flight()
            lost = self.aws.services.inflight.lost()
            counts = {
                **recovery.recover(lost, store, queues, self.clock.now()),
                "messages returned": returned,
            }
        logger.info("state restored from %s: %s", self.data_dir, counts)

    def _migrate(self) -> None:
        """A first start of the engine on the state the moto engine kept: its items are moved
        into the engine's tables, then what that stop lost is given back (persist.recover)."""
        assert self.aws.services is not None
        state = self.data_dir / persist.STATE_DIR
        kept = persist.kept_items(state, {t.id: t for t in r.TABLES}, time.time())
        with uncounted():
            count = self.aws.services.load_items(kept.items)
            persist.recover(
                clients.dynamodb(),
                self._store(),
                SqsQueues(clients.sqs(), self.aws.queue_urls),
                self.aws.env[r.ENV_RUNS_TABLE],
                self.shards,
                datetime.fromtimestamp(kept.saved_at, UTC),
                self.clock.now(),
            )
        moved = state.with_name(f"{persist.STATE_DIR}.migrated")
        state.rename(moved)
        logger.warning(
            "moved %d items kept by the moto engine into the local engine (%s); the old files"
            " are kept in %s",
            count,
            self.data_dir / ENGINE_DIR,
            moved,
        )

    def _upkeep(self) -> None:
        """Now and then, the engine's expired items deleted (a few at a time)."""
        while not self._halt.wait(UPKEEP_SECONDS):
            services = self.aws.services
            if services is None:
                return
            try:
                while services.sweep() and not self._halt.is_set():
                    pass
            except Exception:
                logger.exception("deleting expired items failed")

    def _recover(self) -> None:
        """A start on kept state: give back what the last stop lost (see persist.recover)."""
        assert self.aws.state is not None
        assert self.aws.state.saved_at is not None
        saved_at = datetime.fromtimestamp(self.aws.state.saved_at, UTC)
        with uncounted():
            counts = persist.recover(
                clients.dynamodb(),
                self._store(),
                SqsQueues(clients.sqs(), self.aws.queue_urls),
                self.aws.env[r.ENV_RUNS_TABLE],
                self.shards,
                saved_at,
                self.clock.now(),
            )
        logger.info("state restored from %s: %s", self.data_dir, counts)
        with uncounted():  # (kept state from before names were unique per owner)
            names = claim_existing_names(self._store(), self.clock.now())
        for duplicate in names.duplicates:
            logger.warning(
                "owner %r has %d jobs named %r (%s): names are unique now; rename or delete"
                " all but %s",
                duplicate.owner,
                len(duplicate.job_ids),
                duplicate.name,
                ", ".join(duplicate.job_ids),
                duplicate.job_ids[0],
            )

    def _compact(self) -> None:
        """Now and then, fold the journal of the kept tables into a new snapshot."""
        while not self._halt.wait(5):
            state = self.aws.state
            if state is None:
                return
            try:
                state.compact_if_long()
            except Exception:
                logger.exception("compacting the kept state failed")

    def _nothing_to_catch_up(self) -> None:
        """A fresh system has no occurrence before it started: each shard's checkpoint
        starts at the minute before now, so that the first tick does not read the last hour
        minute by minute, as it must after an outage or for a shard added to a deployment."""
        store = self._store()
        before = ids.minute_of(self.clock.now()) - timedelta(minutes=1)
        with uncounted():
            for shard in range(self.shards):
                store.open_minute(shard, before)
                store.close_minute(shard, before)

    def _ensure_heartbeat(self) -> None:
        """The heartbeat job, as the stack's deployment creates it (the same code the
        dispatcher runs for ``{"heartbeat": "ensure"}``); the system's own, not counted."""
        store = self._store()
        queues = SqsQueues(clients.sqs(), self.aws.queue_urls)
        index = TimeIndex(store, queues, self.shards, self.clock.now)
        with uncounted():
            heartbeat.ensure(store, index, self.clock.now())

    def invoke(self, function: r.Function, event: Any) -> Any:
        assert self.aws.runtime is not None
        return self.aws.runtime.invoke(function_name(function), event)

    def _answer(self, event: Any) -> Any:
        """An API request, answered by the api function while background work makes way."""
        with self.foreground.serving():
            return self.invoke(r.API_FUNCTION, event)

    def _erase(self, params: dict[str, str]) -> dict[str, Any]:
        """``POST /_local/erase?owner=…``: the eraser function, as an operator invokes it on
        AWS (``chronoq admin erase``)."""
        owner = params.get("owner", "")
        if not owner:
            raise ValueError("owner: name the owner to erase (?owner=...)")
        answer: dict[str, Any] = self.invoke(
            r.ERASER_FUNCTION, {"owner": owner, "by": params.get("by") or "local admin"}
        )
        return answer

    def start(self) -> LocalSystem:
        if self.engine == ENGINE_LOCAL and not self.in_memory:
            self._held.enter_context(running(self.data_dir))
        try:
            self._start()
        except BaseException:
            self._held.close()
            raise
        self._announced = instance.Running(
            instance.reachable_url(self.host, self.port),
            None
            if self._aws_server is None
            else instance.reachable_url(self.host, self._aws_server.server_address[1]),
            os.getpid(),
        )
        try:
            instance.announce(self.data_dir, self._announced)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> LocalSystem:
        # The ports first: targets are kept from them (see LocalAWS.own_ports).
        self._server = serve(
            self.host,
            self.port,
            tokens.secret(self.data_dir),
            self._answer,
            controls={
                "POST /_local/ticker/stop": lambda _: self._stop_ticker(),
                "POST /_local/ticker/start": lambda _: self._start_ticker(),
                "GET /_local/usage": lambda _: self.aws.usage_document(),
                "POST /_local/usage/reset": lambda _: self._reset_usage(),
                "POST /_local/erase": self._erase,
            },
            downloads=(LINK_PATH, self._download),
        )
        self.port = self._server.server_address[1]
        ports = [self.port]
        if self.aws_port is not None:
            credentials = tokens.aws_credentials(self.data_dir)
            self._aws_server = endpoint.bind_near(self.host, self.aws_port, credentials)
            ports.append(self._aws_server.server_address[1])
        try:
            self._start_aws(tuple(ports))
        except BaseException:
            self._close_servers()
            raise
        return self

    def _start_aws(self, own_ports: tuple[int, ...]) -> None:
        self.aws = LocalAWS(
            shards=self.shards,
            task_modules=self.task_modules,
            topic_statuses=self.topic_statuses,
            block_private_targets=self.block_private_targets,
            allowed_target_networks=self.allowed_target_networks,
            max_jobs_per_owner=self.max_jobs_per_owner,
            owner_limits=self.owner_limits,
            allow_host_commands=self.allow_host_commands,
            state_dir=None if self.in_memory else self.data_dir / persist.STATE_DIR,
            engine=self.engine,
            engine_dir=None if self.in_memory else self.data_dir / ENGINE_DIR,
            execution_histories=False,  # (nothing of chronoq local reads them)
            signing_secret=None if self.in_memory else tokens.signing_secret(self.data_dir),
            clock=self.clock,
            foreground=self.foreground,
            own_ports=own_ports,
            own_addresses=instance.machine_addresses(self.host),
        ).start()
        if self.aws.services is not None:  # (links to its buckets' objects: served here)
            self.aws.services.objects.link_base = self.url
        sqs = self.aws.client("sqs")
        self.ticker = Ticker(
            lambda e: self.invoke(r.DISPATCHER_FUNCTION, e),
            self.tick_seconds,
            self._halt,
            r.shard_groups(self.shards, self.dispatch_groups),
        )
        services = self.aws.services
        if services is not None and services.restored:
            self._recover_engine()
        elif services is not None and (self.data_dir / persist.STATE_DIR).is_dir():
            if self.in_memory:
                self._nothing_to_catch_up()
            else:
                self._migrate()
        elif self.aws.restored:
            self._recover()
        else:
            self._nothing_to_catch_up()
        if self.heartbeat:
            self._ensure_heartbeat()
        self._warm(first=True)
        self._threads = [
            self.ticker,
            threading.Thread(target=self._warm, args=(False,), daemon=True),
        ]
        if self.aws.state is not None:
            self._threads.append(threading.Thread(target=self._compact, daemon=True))
        if self.aws.services is not None:
            self._threads.append(threading.Thread(target=self._upkeep, daemon=True))
        self._threads += queue_pollers(
            sqs,
            [self.aws.queue_urls[p] for p in r.PRIORITIES],
            lambda e: self.invoke(r.WORKER_FUNCTION, e),
            self._halt,
            self.pollers,
            self.clock.listen,
        )
        # the streams' readers (the runs stream's, the audit stream's), one poller each, as
        # the stack's event source mappings
        for readers in fanout.STREAM_READERS.values():
            self._threads += [self._stream_poller(reader) for reader in readers]
        if self._aws_server is not None:
            endpoint.start(self._aws_server)
        self._threads.append(
            threading.Thread(target=self._server.serve_forever, name="gateway", daemon=True)
        )
        for thread in self._threads:
            thread.start()

    def _stream_poller(self, reader: fanout.StreamReader) -> StreamPoller:
        """The event source mapping of one of a stream's readers (the archiver's batching
        window is ``archive_window_seconds`` here, on either stream)."""
        window = reader.local_batching_window_seconds
        if reader.function is r.ARCHIVER_FUNCTION:
            window = self.archive_window_seconds
        return StreamPoller(
            self.aws.streams_of(reader),
            self.aws.stream_arn(reader),
            lambda e: self.invoke(reader.function, e),
            self._halt,
            self.aws.stream_filter(reader),
            reader.batch_size,
            reader.max_retries,
            window=window,
            name=f"stream-poller-{reader.name}",
            caller=stream_caller(reader.function.name),
        )

    def _close_servers(self) -> None:
        for server in (self._aws_server, self._server):
            if server is not None:
                server.server_close()

    def _download(self, target: str) -> tuple[int, dict[str, str], bytes]:
        """A presigned link to an object of chronoq's own buckets (the archive's), as S3
        answers one: the object, or why not."""
        services = self.aws.services if hasattr(self, "aws") else None
        if services is None:
            gone = b'{"error":{"code":"not_found","message":"no such link","field":null}}'
            return 404, {"content-type": "application/json"}, gone
        try:
            data, content_type = services.objects.download(target)
        except LinkRefused as refused:
            code = "forbidden" if refused.status == 403 else "not_found"
            body = json.dumps({"error": {"code": code, "message": str(refused), "field": None}})
            return refused.status, {"content-type": "application/json"}, body.encode()
        return 200, {"content-type": content_type}, data

    def _stop_ticker(self) -> dict[str, Any]:
        """Simulate a dispatcher outage: no ticks until started again."""
        self.ticker.paused.set()
        return {"ticker": "stopped"}

    def _reset_usage(self) -> dict[str, Any]:
        self.aws.reset_usage()
        return {"usage": "reset"}

    def _start_ticker(self) -> dict[str, Any]:
        self.ticker.paused.clear()
        return {"ticker": "running"}

    @property
    def restored(self) -> bool:
        """Did this start find the state an earlier one kept?"""
        services = self.aws.services
        return services.restored if services is not None else self.aws.restored

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def aws_url(self) -> str | None:
        """Where the embedded AWS is served (None: it is not)."""
        if self._aws_server is None:
            return None
        return f"http://{self.host}:{self._aws_server.server_address[1]}"

    def stop(self) -> None:
        """Stop promptly: every thread is told at once (the halt event; the idle pollers
        woken rather than left to their next look; the servers' loops woken rather than left
        to their poll interval: chronoq.local.serving), then waited for."""
        self._halt.set()
        if not hasattr(self, "aws"):  # (never started)
            return
        try:
            for thread in self._threads:
                if isinstance(thread, QueuePoller):
                    thread.wake()
            if self._aws_server is not None:
                self._aws_server.shutdown()
                self._aws_server.server_close()
            if self._server is not None:
                self._server.shutdown()
                self._server.server_close()
            # (daemon threads: one still busy after the wait ends with the process; what it
            # had begun is given back at the next start, see persist.recover)
            deadline = time.monotonic() + self.stop_seconds
            for thread in self._threads:
                thread.join(timeout=max(0.0, deadline - time.monotonic()))
        finally:
            if self._announced is not None:
                instance.withdraw(self.data_dir, self._announced)
                self._announced = None
            self.aws.stop()
            self._held.close()
