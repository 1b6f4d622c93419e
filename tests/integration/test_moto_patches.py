"""chronoq local patches private moto internals: this says, before anything else breaks, when
the installed moto is not the one they were written for."""

from __future__ import annotations

import pytest
from chronoq.local.emulation import moto_version


def test_given_the_pinned_moto_when_checked_then_it_is_the_version_the_patches_were_written_for() -> (
    None
):
    installed = moto_version.installed_moto()
    assert installed == moto_version.WRITTEN_FOR_MOTO, (
        f"chronoq local's moto patches were written for moto {moto_version.WRITTEN_FOR_MOTO}, "
        f"moto {installed} is installed: check every entry of moto_version.PATCHED "
        "and update WRITTEN_FOR_MOTO"
    )
    assert moto_version.missing_moto_internals() == []


def test_given_a_moto_without_a_patched_internal_when_checked_then_the_error_names_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        moto_version, "PATCHED", (*moto_version.PATCHED, ("moto", "NoSuchInternal.run_task"))
    )

    with pytest.raises(moto_version.UnsupportedMoto, match=r"moto\.NoSuchInternal\.run_task"):
        moto_version.check_moto()
