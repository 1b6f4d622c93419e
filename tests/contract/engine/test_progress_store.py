"""tests/contract/test_progress_store.py on the engine (see conftest)."""

from tests.contract.test_progress_store import *  # noqa: F403
