.venv/bin/chronoq jobs create --name tick --cron '* * * * *' --http http://127.0.0.1:9000/ --method GET
# id           job_9a8b7c6d5e4f3a2b
# name         tick
# state        ACTIVE
# schedule     every minute
# next run     2026-11-25 21:49:00Z (in 36.8 s)
# target       http GET http://127.0.0.1:9000/
# priority     normal
# timeout      60 s
# concurrency  allow
# retry        up to 3 attempts
# version      1
# created      2026-11-25 21:48:23Z
# updated      2026-11-25 21:48:23Z
TICK=job_9a8b7c6d5e4f3a2b   # its id
RUN=$(.venv/bin/chronoq jobs trigger $TICK -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
.venv/bin/chronoq runs logs $RUN --follow   # new lines as they come; status changes (on stderr)
# ...
# 2026-11-25T21:48:24.414Z [attempt 1] GET http://127.0.0.1:9000/
# ...
# 2026-11-25T21:48:24.416Z [attempt 1] answered HTTP 200 in 2 ms
# -- job_9a8b7c6d5e4f3a2b_20261125T214824Z-m3c9d2e SUCCEEDED (lag 412 ms; took 4 ms)
.venv/bin/chronoq jobs delete $TICK   # or it calls the web server every minute
# deleted job_9a8b7c6d5e4f3a2b
