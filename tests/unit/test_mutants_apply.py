"""Every removal ``make mutants`` makes (tests/mutants.py) still finds the code it removes, and
every test it names exists: a change to the code a mechanism lives in fails here, at once,
instead of leaving ``make mutants`` unable to remove it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mutants import MUTANTS, ROOT, Mutant, apply


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_given_a_mechanism_when_its_removal_is_applied_to_a_copy_then_its_code_is_found_and_changed(
    mutant: Mutant, tmp_path: Path
) -> None:
    copy = tmp_path / mutant.path
    copy.parent.mkdir(parents=True)
    original = (ROOT / mutant.path).read_text()
    copy.write_text(original)

    apply(tmp_path, mutant)

    assert copy.read_text() != original
    for test in mutant.tests:
        assert (ROOT / test.split("::", 1)[0]).is_file(), test
