"""tests/contract/test_secrets_store.py on the engine (see conftest)."""

from tests.contract.test_secrets_store import *  # noqa: F403
