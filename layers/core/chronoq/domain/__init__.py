"""The domain: what a schedule, a target, a job and a run are, and the rules over them.

Pure: pydantic models and functions, no boto3, no environment, no I/O.
"""
