"""The command line's side of time windows, flow control, backfills and re-runs: flags to the
API's JSON, past instants, the requests each command sends (to a fake API in this process),
and the preview of a window."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread
from typing import Any

import pytest
from chronoq.cli.backfills import past_instant
from chronoq.cli.jobspec import BadInput, JobFlags, build
from chronoq.cli.main import main
from chronoq.domain import windows
from chronoq.domain.jobs import JobSpec

NOW = datetime(2026, 11, 25, 21, 48, 0, tzinfo=UTC)


def test_given_window_and_flow_flags_when_a_job_is_built_then_they_become_its_schedules_window_and_its_flow() -> (
    None
):
    document = build(
        JobFlags(
            name="sync",
            cron="0 0 * * *",
            http="https://example.com/",
            window="1h",
            flow="partner-api",
            flow_max_running=5,
            flow_max_rate=2,
        )
    )

    assert document["schedule"] == {
        "type": "cron",
        "expression": "0 0 * * *",
        "window_seconds": 3600,
    }
    assert document["flow"] == {"key": "partner-api", "max_running": 5, "max_starts_per_second": 2}
    JobSpec.model_validate(document)  # what the API takes


def test_given_a_window_flag_and_a_file_when_a_job_is_built_then_the_files_schedule_gets_it() -> (
    None
):
    base = {"schedule": {"type": "rate", "every": "1 hour"}}

    assert build(JobFlags(window="90s"), base)["schedule"] == {
        "type": "rate",
        "every": "1 hour",
        "window_seconds": 90,
    }


@pytest.mark.parametrize(
    ("flags", "option"),
    [
        (JobFlags(at="+30s", window="60s"), "--window"),  # one-time: no window
        (JobFlags(window="60s"), "--window"),  # no schedule to put it in
        (JobFlags(cron="* * * * *", window="soon"), "--window"),
        (JobFlags(flow_max_running=3), "--flow-max-running"),  # without --flow
        (JobFlags(flow="k"), "--flow"),  # no limit
    ],
)
def test_given_window_or_flow_flags_that_cannot_make_a_job_when_built_then_the_option_is_named(
    flags: JobFlags, option: str
) -> None:
    with pytest.raises(BadInput) as refused:
        build(flags, now=NOW)
    assert refused.value.option == option


@pytest.mark.parametrize(
    ("text", "instant"),
    [
        ("now", "2026-11-25T21:48:00+00:00"),
        ("-3h", "2026-11-25T18:48:00+00:00"),
        ("2d ago", "2026-11-23T21:48:00+00:00"),
        ("2026-11-01T00:00", "2026-11-01T00:00:00+00:00"),
        ("2026-11-01T01:00:00+01:00", "2026-11-01T01:00:00+01:00"),
    ],
)
def test_given_an_instant_of_a_past_range_when_parsed_then_it_is_iso_8601(
    text: str, instant: str
) -> None:
    assert past_instant(text, NOW) == instant


def test_given_a_window_and_a_job_when_previewed_locally_then_each_fire_time_shows_the_jobs_start(
    capsys: pytest.CaptureFixture[str],
) -> None:
    job_id = "job_5f0c1a2b3c4d5e6f"

    code = main(
        [
            "schedule",
            "preview",
            "--cron",
            "0 0 * * *",
            "--start-at",
            "2030-01-01T00:00:00Z",
            "--window",
            "1h",
            "--job",
            job_id,
            "--count",
            "2",
            "-o",
            "json",
        ]
    )

    assert code == 0
    fires = json.loads(capsys.readouterr().out)["fire_times"]
    for fire in fires:
        at = datetime.fromisoformat(fire["utc"])
        offset = windows.offset(job_id, at, 3600)
        assert fire["starts_at"] == f"{at:%Y-%m-%d}T00:{offset // 60:02d}:{offset % 60:02d}Z"


def test_given_a_window_longer_than_the_gap_when_previewed_locally_then_the_field_is_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["schedule", "preview", "--every", "5m", "--window", "10m"])

    assert code == 2
    assert capsys.readouterr().err.startswith("schedule.window_seconds:")


# --- the requests the commands send ----------------------------------------------------------


class FakeApi:
    """An HTTP server answering every request with ``answer``, noting what it got."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.answer: Any = {}
        self.status = 200
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                fake.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "body": json.loads(body) if body else None,
                        "key": self.headers.get("Idempotency-Key"),
                    }
                )
                data = json.dumps(fake.answer).encode()
                self.send_response(fake.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _any

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def fake_api(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[FakeApi]:
    api = FakeApi()
    thread = Thread(target=api.server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("CHRONOQ_URL", api.url)
    monkeypatch.setenv("CHRONOQ_TOKEN", "t")
    monkeypatch.setenv("CHRONOQ_CONFIG", str(tmp_path / "profile.json"))
    try:
        yield api
    finally:
        api.server.shutdown()
        api.server.server_close()


BACKFILL = {
    "id": "bf1",
    "from": "2026-11-24T00:00:00Z",
    "to": "2026-11-25T00:00:00Z",
    "job_id": "job_1",
    "owner": "alice",
    "state": "RUNNING",
    "total": 144,
    "max_in_flight": 10,
    "created_at": "2026-11-25T21:48:00Z",
    "finished_at": None,
    "runs": {"SUCCEEDED": 3, "SCHEDULED": 7},
}


def test_given_a_backfill_command_when_run_then_it_posts_the_range_with_its_key_and_shows_the_backfill(
    fake_api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_api.answer = BACKFILL

    code = main(
        [
            "jobs",
            "backfill",
            "job_1",
            "--from",
            "2026-11-24T00:00:00Z",
            "--to",
            "2026-11-25T00:00:00Z",
            "--idempotency-key",
            "k1",
        ]
    )

    assert code == 0
    (request,) = fake_api.requests
    assert (request["method"], request["path"], request["key"]) == (
        "POST",
        "/jobs/job_1/backfill",
        "k1",
    )
    assert request["body"] == {
        "from": "2026-11-24T00:00:00+00:00",
        "to": "2026-11-25T00:00:00+00:00",
    }
    shown = capsys.readouterr().out
    assert "RUNNING" in shown
    assert "3 SUCCEEDED, 7 SCHEDULED" in shown
    assert "at most 10" in shown


@pytest.mark.parametrize(
    ("args", "method", "path"),
    [
        (["backfills", "list", "job_1"], "GET", "/jobs/job_1/backfills"),
        (["backfills", "get", "job_1", "bf1"], "GET", "/jobs/job_1/backfills/bf1"),
        (["backfills", "cancel", "job_1", "bf1"], "POST", "/jobs/job_1/backfills/bf1/cancel"),
        (["runs", "rerun", "job_1_20261125T020000Z"], "POST", "/runs/job_1_20261125T020000Z/rerun"),
    ],
)
def test_given_a_backfill_or_rerun_command_when_run_then_it_calls_its_route(
    fake_api: FakeApi, args: list[str], method: str, path: str
) -> None:
    fake_api.answer = {"backfills": [BACKFILL]} if args[1] == "list" else BACKFILL

    assert main([*args, "-o", "json"]) == 0

    (request,) = fake_api.requests
    assert (request["method"], request["path"].split("?")[0]) == (method, path)


def test_given_a_job_rerun_command_when_run_then_it_posts_the_range_and_statuses_and_lists_the_new_runs(
    fake_api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_api.answer = {
        "runs": [
            {
                "id": "job_1_20261125T020000Z-rabc123",
                "status": "SCHEDULED",
                "scheduled_at": "2026-11-25T02:00:00Z",
                "attempts": [],
                "lag_ms": None,
            }
        ]
    }

    code = main(
        [
            "jobs",
            "rerun",
            "job_1",
            "--from",
            "2026-11-24T00:00:00Z",
            "--to",
            "2026-11-25T00:00:00Z",
            "--status",
            "failed,timed_out",
        ]
    )

    assert code == 0
    (request,) = fake_api.requests
    assert request["body"]["statuses"] == ["FAILED", "TIMED_OUT"]
    assert "job_1_20261125T020000Z-rabc123" in capsys.readouterr().out
