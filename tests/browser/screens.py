"""The console's screenshots the documentation shows, and the browser tests that take them.

Each browser test keeps a screenshot of each step in ``test-artifacts/console/``. The steps
named in ``DOCUMENTED`` are also the site's images (``docs/images/<name>.png``): with
``CHRONOQ_DOCS_SCREENSHOTS=1`` (``make screenshots``) the tests write them there too, so the
pictures are always of the console as it is, taken by the tests that prove it works.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The site's images.
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
#: Set to 1 to write the documented steps' screenshots into ``DOCS_IMAGES``.
UPDATE_VARIABLE = "CHRONOQ_DOCS_SCREENSHOTS"

#: A test's step (its screenshot's name) -> the site's image of it.
DOCUMENTED = {
    "10-labels": "console-jobs",
    "06-job-triggered": "console-job",
    "05-run": "console-run",
    "backfill-started": "console-backfill",
    "audit-trail": "console-audit",
    "50-after-job": "console-pipeline",
}


def documented_image(step: str) -> Path | None:
    """Where the step's screenshot goes in the site, when the images are being regenerated."""
    if step not in DOCUMENTED or os.environ.get(UPDATE_VARIABLE) != "1":
        return None
    DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
    return DOCS_IMAGES / f"{DOCUMENTED[step]}.png"
