"""tests/contract/test_executor.py on the engine (see conftest)."""

from tests.contract.test_executor import *  # noqa: F403
