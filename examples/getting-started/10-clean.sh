curl -s -w 'HTTP %{http_code}\n' -X DELETE "$API/jobs/job_7e1d2c3b4a596877" -H "Authorization: Bearer $TOKEN"
# HTTP 204
.venv/bin/chronoq jobs delete $JOB
# deleted job_5f0c1a2b3c4d5e6f
.venv/bin/chronoq jobs list
# ID  NAME  STATE  SCHEDULE  NEXT RUN
