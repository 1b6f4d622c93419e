"""What each function does, over the adapters it is given (see chronoq.usecases.ports)."""
