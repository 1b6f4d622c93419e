.venv/bin/chronoq runs list $JOB
# ID                                     STATUS     SCHEDULED             LAG   DURATION  ATTEMPTS
# job_5f0c1a2b3c4d5e6f_20261125T214815Z  SUCCEEDED  2026-11-25 21:48:15Z  4 ms  42 ms     1
RUN=job_5f0c1a2b3c4d5e6f_20261125T214815Z   # the run id from the list above
.venv/bin/chronoq runs get $RUN
# id         job_5f0c1a2b3c4d5e6f_20261125T214815Z
# job        job_5f0c1a2b3c4d5e6f
# status     SUCCEEDED
# trigger    schedule
# priority   normal
# scheduled  2026-11-25 21:48:15Z
# queued     2026-11-25 21:47:59Z
# started    2026-11-25 21:48:15Z
# finished   2026-11-25 21:48:15Z
# lag        4 ms
# duration   42 ms
# output     {"status_code":200,"body":"<!DOCTYPE HTML>\n<html lang=\"en\">\n<head>...
#
# ATTEMPT  STARTED               FINISHED              OUTCOME    ERROR
# 1        2026-11-25 21:48:15Z  2026-11-25 21:48:15Z  SUCCEEDED
.venv/bin/chronoq runs output $RUN
# {"status_code":200,"body":"<!DOCTYPE HTML>\n<html lang=\"en\">\n<head>..."}
.venv/bin/chronoq runs logs $RUN
# 2026-11-25T21:48:15.006Z [attempt 1] GET http://127.0.0.1:9000/
# 2026-11-25T21:48:15.044Z [attempt 1] answered HTTP 200 in 38 ms
