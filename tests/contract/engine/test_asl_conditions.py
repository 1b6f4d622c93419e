"""tests/contract/test_asl_conditions.py on the engine (see conftest)."""

from tests.contract.test_asl_conditions import *  # noqa: F403
