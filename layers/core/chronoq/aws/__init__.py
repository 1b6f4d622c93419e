"""Adapters to AWS services, one per service, each implementing a port of chronoq.usecases."""
