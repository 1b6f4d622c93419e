# chronoq — developer commands. Every target installs what it needs into .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
#: what `make run` needs only (chronoq and the embedded AWS); STAMP implies it
RUN_STAMP := $(VENV)/.installed-run
#: the Node tools package.json pins (the CDK CLI, asl-validator), in ./node_modules
NODE_STAMP := node_modules/.installed
TEMPLATE := cdk.out/Chronoq.template.json
HOST ?= 127.0.0.1
PORT ?= 8080
#: Python keeps compiled modules (and pytest its rewritten tests) in __pycache__: every process
#: of the suite, every chronoq local it starts, reads them instead of compiling again (an
#: environment that turns this off makes collecting the suite alone twice as slow)
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install run test test-fast lint format synth docs screenshots bench mutants clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP) $(RUN_STAMP)

$(RUN_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[local]"
	touch $(RUN_STAMP)

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

install: $(STAMP) $(NODE_STAMP)

run: $(RUN_STAMP) ## start chronoq local on http://$(HOST):$(PORT) (installs only what running needs)
	$(BIN)/chronoq local --host $(HOST) --port $(PORT)

test: $(STAMP) $(NODE_STAMP) ## the whole suite: shared out over three processes (see tests/conftest.py), then the least-privilege check over every AWS call the suite made
	calls=$$(mktemp -t chronoq-calls.XXXXXX) && trap 'rm -f "$$calls" "$$calls".*' EXIT \
	&& export CHRONOQ_CALLS_FILE="$$calls" \
	&& $(BIN)/pytest -n 3 --ignore=tests/infra/test_least_privilege.py \
	&& $(BIN)/pytest tests/infra/test_least_privilege.py

test-fast: $(STAMP) ## the fast layer: unit and contract tests
	$(BIN)/pytest -n 2 tests/unit tests/contract

lint: $(STAMP) ## ruff, mypy (strict), the import contracts, cfn-lint on the synthesized template, and the docs site built strictly (a broken link or anchor fails)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy layers/core functions cdk tests bench examples
	# the layers, as pyproject.toml's import-linter contracts say (nothing imports upwards, no cycle)
	$(BIN)/lint-imports
	$(BIN)/python cdk/app.py
	# W3005 (a DependsOn that a Ref or GetAtt already implies): the CDK writes both, and the
	# redundant dependency changes nothing in the order CloudFormation creates resources.
	$(BIN)/cfn-lint --ignore-checks W3005 -- $(TEMPLATE)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

screenshots: $(STAMP) ## the console's browser tests, also writing the steps the docs show into docs/images/ (tests/browser/screens.py)
	CHRONOQ_DOCS_SCREENSHOTS=1 $(BIN)/pytest -p no:xdist tests/browser

docs: $(STAMP) ## serve the documentation site on http://127.0.0.1:8000, rebuilt as its pages change
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --dev-addr 127.0.0.1:8000

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

synth: $(STAMP) ## synthesize the CDK app into cdk.out/, once cdk-nag's AwsSolutions and Serverless packs find nothing unacknowledged in it (else it fails, listing them)
	$(BIN)/python cdk/app.py --rules
	@ls cdk.out/*.template.json

bench: $(STAMP) ## benchmarks: chronoq local's engine beside the moto engine (bursts, sustained runs/s, API latency in a burst, memory and start-up with a million runs kept); the dispatcher's AWS requests per run and throughput (also around clock changes); start lag; the whole run path's requests, units and cost per run; a cron schedule's next fire time; a time window's spread; one owner's lag while another floods; a job's backfills listed and read with 10,000 runs under it, and what counting a backfill's runs costs; the archive's cost per million runs at 1 run/s and below; what a downstream run of a pipeline and a lapsed wait cost
	$(BIN)/python -m bench.lag --runs 100 --singles 5
	$(BIN)/python -m bench.runpath
	$(BIN)/python -m bench.schedules
	$(BIN)/python -m bench.window --jobs 1000 --window 60
	$(BIN)/python -m bench.local
	$(BIN)/python -m bench.fairness
	$(BIN)/python -m bench.backfill_list
	$(BIN)/python -m bench.archive
	$(BIN)/python -m bench.pipelines
	$(BIN)/python -m bench.dispatch --jobs 1000

mutants: $(STAMP) ## each mechanism a promise rests on, removed in a scratch copy: the fast tests that catch it
	$(BIN)/python -m tests.mutants $(MUTANTS)

clean:
	rm -rf cdk.out .pytest_cache .mypy_cache .ruff_cache node_modules
