API=$(python3 -c 'import json; print(json.load(open(".chronoq/local.json"))["url"])')
TOKEN=$(.venv/bin/chronoq token alice)
echo "$API"
# http://127.0.0.1:8080
curl -s -w '\nHTTP %{http_code}\n' -X POST "$API/jobs" \
  -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d @examples/getting-started/hello-http.json
# HTTP 201
