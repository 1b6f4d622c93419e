"""tests/contract/test_calendars_store.py on the engine (see conftest)."""

from tests.contract.test_calendars_store import *  # noqa: F403
