"""Retries that follow the server's hint (docs/api.md, "Status codes").

UNAVAILABLE and RESOURCE_EXHAUSTED are retried; RESOURCE_EXHAUSTED for an
oversized message or the decode CPU limit is not (retrying cannot help).
The wait is the server's `retry-after-s` trailing metadata when it sent one,
else an exponential backoff; either gets up to `jitter` more, so that
clients refused together do not come back together. Attempts, and the total
time spent waiting, are bounded; so is everything by the call's timeout.
"""
from __future__ import annotations

import dataclasses
import random

import grpc

RETRY_AFTER_KEY = "retry-after-s"
_RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED)
_PERMANENT_EXHAUSTION = ("larger than max", "max_decode_cpu_s")


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 6
    # Total seconds spent waiting between attempts, over the whole call.
    budget_s: float = 120.0
    initial_backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    multiplier: float = 2.0
    # Extra fraction of the wait added at random (0.2: up to 20 % longer).
    jitter: float = 0.2

    def delay_s(self, retry: int, hint_s: float | None) -> float:
        """Seconds to wait before retry number `retry` (1, 2, ...)."""
        if hint_s is not None:
            base = hint_s
        else:
            base = min(self.max_backoff_s,
                       self.initial_backoff_s * self.multiplier ** (retry - 1))
        return base * (1.0 + random.uniform(0.0, self.jitter))


NO_RETRY = RetryPolicy(max_attempts=1)


def retry_hint_s(error) -> float | None:
    """The server's retry-after-s of a failed call, in seconds."""
    try:
        metadata = error.trailing_metadata() or ()
    except Exception:  # an error raised before the call had metadata
        return None
    for key, value in metadata:
        if key == RETRY_AFTER_KEY:
            try:
                return max(0.0, float(value))
            except ValueError:
                return None
    return None


def retryable(code, details: str) -> bool:
    if code not in _RETRYABLE:
        return False
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        return not any(text in (details or "") for text in _PERMANENT_EXHAUSTION)
    return True
