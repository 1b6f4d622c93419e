.venv/bin/chronoq jobs get $JOB --token $(.venv/bin/chronoq token bob); echo "exit $?"
# error: HTTP 404 not_found: job job_5f0c1a2b3c4d5e6f not found
# exit 3
