curl -s -w '\nHTTP %{http_code}\n' -X POST "$API/jobs" \
  -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d @examples/getting-started/hello-http.json
# HTTP 409
