curl -s -w '\nHTTP %{http_code}\n' "$API/jobs/$JOB/runs" -H "Authorization: Bearer $TOKEN"
# HTTP 200
