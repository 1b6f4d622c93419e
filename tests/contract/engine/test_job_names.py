"""tests/contract/test_job_names.py on the engine (see conftest)."""

from tests.contract.test_job_names import *  # noqa: F403
