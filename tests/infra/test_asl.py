"""Both run state machines' definitions against an ASL validator (npm's asl-validator, pinned
in package.json and installed into node_modules by ``make test``): STANDARD is the ASL file,
EXPRESS the batches made from it, each as CDK hands it to CloudFormation (placeholders left
for DefinitionSubstitutions) and as chronoq local creates it (placeholders filled)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from chronoq import resources as r
from chronoq.execution import machines

ROOT = Path(__file__).resolve().parents[2]
VALIDATOR = ROOT / "node_modules" / ".bin" / "asl-validator"
#: What the placeholders become locally (chronoq.local.aws): real ARNs and names.
LOCAL = {
    r.ASL_RUNS_TABLE: "chronoq-local-runs",
    r.ASL_JOBS_TABLE: "chronoq-local-jobs",
    r.ASL_RUNNER_FUNCTION: "arn:aws:lambda:us-east-1:123456789012:function:chronoq-local-runner",
    r.ASL_CONTAINER_CLUSTER: "arn:aws:ecs:us-east-1:123456789012:cluster/chronoq-local",
    r.ASL_CONTAINER_SUBNETS: "subnet-0123456789abcdef0",
    r.ASL_CONTAINER_SECURITY_GROUP: "sg-0123456789abcdef0",
}
MACHINES = {"standard": machines.STATE_MACHINE, "express": machines.EXPRESS_STATE_MACHINE}


#: Every definition, by a name: each machine as deployed and as local, and a broken one (the
#: validator really reads them: that one must be refused).
def _definitions() -> dict[str, str]:
    found = {
        f"{kind}-{where}": machine.definition(LOCAL) if where == "local" else machine.text()
        for kind, machine in MACHINES.items()
        for where in ("deployed", "local")
    }
    broken = json.loads(machines.STATE_MACHINE.text())
    broken["States"]["StartAttempt"]["Next"] = "NoSuchState"
    return {**found, "broken": json.dumps(broken)}


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """What the validator says of each definition (one run for all: node starts once)."""
    if not VALIDATOR.exists():
        pytest.fail(f"{VALIDATOR} is missing: `make test` (npm ci) installs it")
    folder = tmp_path_factory.mktemp("asl")
    paths = {}
    for name, text in _definitions().items():
        paths[name] = folder / f"{name}.asl.json"
        paths[name].write_text(text)
    arguments = [a for p in paths.values() for a in ("--json-path", str(p))]
    checked = subprocess.run(
        [str(VALIDATOR), *arguments], capture_output=True, text=True, timeout=120, check=False
    )
    # one verdict per file, each starting with a mark and the file's quoted path
    output = checked.stdout + checked.stderr
    marks = sorted((output.index(f'"{p}"'), n) for n, p in paths.items() if f'"{p}"' in output)
    ends = [i for i, _ in marks[1:]] + [len(output)]
    return {name: output[i:end] for (i, name), end in zip(marks, ends, strict=True)}


@pytest.mark.parametrize("where", ["deployed", "local"])
@pytest.mark.parametrize("kind", MACHINES)
def test_given_a_run_state_machine_when_validated_then_the_asl_validator_accepts_it(
    kind: str, where: str, verdicts: dict[str, str]
) -> None:
    verdict = verdicts[f"{kind}-{where}"]

    assert verdict.split("\n")[0].endswith("is valid"), verdict


def test_given_a_definition_with_a_dangling_next_when_validated_then_it_is_refused(
    verdicts: dict[str, str],
) -> None:
    assert "is invalid" in verdicts["broken"]
    assert "NoSuchState" in verdicts["broken"]
