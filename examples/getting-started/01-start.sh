python3 -m http.server 9000 --bind 127.0.0.1 --directory "$(mktemp -d)" &
.venv/bin/chronoq login --local --user alice
