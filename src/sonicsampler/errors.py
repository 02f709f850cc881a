"""The library's exceptions: every one names the request (row or slot) and the field at fault."""
from __future__ import annotations


class SamplingInputError(ValueError):
    """Bad input detected on the host, before anything reaches the device."""

    def __init__(self, field: str, message: str, request: int | str | None = None):
        self.field = field
        self.request = request
        where = f"request {request}: " if request is not None else ""
        super().__init__(f"{where}{field}: {message}")


class InvalidParameterError(SamplingInputError):
    """A SamplingParams field holds a value outside its domain."""
