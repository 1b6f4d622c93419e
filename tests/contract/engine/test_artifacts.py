"""tests/contract/test_artifacts.py on the engine (see conftest)."""

from tests.contract.test_artifacts import *  # noqa: F403
