"""tests/contract/test_erasure_store.py on the engine (see conftest)."""

from tests.contract.test_erasure_store import *  # noqa: F403
