API=${CHRONOQ_URL:-http://127.0.0.1:8080}   # chronoq local: make run's address, unless $CHRONOQ_URL says another
TOKEN=$(.venv/bin/chronoq token alice)
curl -s -w '\nHTTP %{http_code}\n' -X POST "$API/jobs" \
  -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d @examples/getting-started/hello-http.json
# HTTP 201
