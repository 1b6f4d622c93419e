"""tests/contract/test_archive.py on the engine (see conftest)."""

from tests.contract.test_archive import *  # noqa: F403
