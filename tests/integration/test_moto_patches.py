"""chronoq local patches private moto internals: this says, before anything else breaks, when
the installed moto is not the one they were written for."""

from __future__ import annotations

import moto
import pytest
from chronoq.local import emulation


def test_given_the_pinned_moto_when_checked_then_it_is_the_version_the_patches_were_written_for() -> (
    None
):
    assert moto.__version__ == emulation.WRITTEN_FOR_MOTO, (
        f"chronoq local's moto patches were written for moto {emulation.WRITTEN_FOR_MOTO}, "
        f"moto {moto.__version__} is installed: check every entry of emulation.PATCHED "
        "and update WRITTEN_FOR_MOTO"
    )
    assert emulation.missing_moto_internals() == []


def test_given_a_moto_without_a_patched_internal_when_checked_then_the_error_names_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        emulation, "PATCHED", (*emulation.PATCHED, ("moto.ecs.models", "Gone.run_task"))
    )

    with pytest.raises(emulation.UnsupportedMoto, match=r"moto\.ecs\.models\.Gone\.run_task"):
        emulation.check_moto()
