"""tests/contract/test_audit_trail.py on the engine (see conftest)."""

from tests.contract.test_audit_trail import *  # noqa: F403
