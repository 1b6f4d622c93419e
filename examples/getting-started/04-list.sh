.venv/bin/chronoq jobs list
# ID                    NAME   STATE      SCHEDULE                      NEXT RUN
# job_5f0c1a2b3c4d5e6f  hello  COMPLETED  once at 2026-11-25 21:48:15Z  -
