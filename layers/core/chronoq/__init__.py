"""chronoq: a serverless job scheduler."""

__version__ = "0.1.0"
