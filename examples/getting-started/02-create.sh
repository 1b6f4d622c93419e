JOB=$(.venv/bin/chronoq jobs create --name hello --at +15s --http http://127.0.0.1:9000/ --method GET \
        -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
.venv/bin/chronoq jobs get $JOB
# id           job_5f0c1a2b3c4d5e6f
# name         hello
# state        ACTIVE
# schedule     once at 2026-11-25 21:48:15Z
# next run     2026-11-25 21:48:15Z (in 14.2 s)
# target       http GET http://127.0.0.1:9000/
# priority     normal
# timeout      60 s
# concurrency  allow
# retry        up to 3 attempts
# version      1
# created      2026-11-25 21:47:59Z
# updated      2026-11-25 21:47:59Z
.venv/bin/chronoq runs watch $JOB --count 1
# watching job_5f0c1a2b3c4d5e6f (Ctrl-C to stop)
# ...
# 2026-11-25 21:48:15Z  job_5f0c1a2b3c4d5e6f_20261125T214815Z  SUCCEEDED (lag 4 ms; took 42 ms)
