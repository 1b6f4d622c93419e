"""tests/contract/test_run_features_store.py on the engine (see conftest)."""

from tests.contract.test_run_features_store import *  # noqa: F403
