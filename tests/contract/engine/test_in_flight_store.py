"""tests/contract/test_in_flight_store.py on the engine (see conftest)."""

from tests.contract.test_in_flight_store import *  # noqa: F403
