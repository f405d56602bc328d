"""The asyncio client: Client's methods as coroutines (grpc.aio)."""
from __future__ import annotations

import asyncio
from typing import AsyncIterator, Callable

import grpc
import grpc.aio

from . import _common
from ._common import DiarizationError, Options, Security, StreamSource
from ._proto import diarization_pb2 as pb2
from ._proto import diarization_pb2_grpc as pb2_grpc
from .client import RetryCallback, _Attempts
from .results import DiarizationResult, PartialResult
from .retry import RetryPolicy
from .voiceprints import Voiceprint


# grpc.aio reports a stream that the server ended (e.g. refused at its start)
# while the client was still writing as INTERNAL with this text, losing the
# server's status (grpc/aio/_call.py: _write's set_internal_error). Such a
# stream is retried with backoff while it can be replayed; the next attempt
# gets the server's own status.
_SEND_FAILED_DETAILS = "Internal error from Core"


def _send_failed(error, source: StreamSource) -> bool:
    return (source.replayable and error.code() == grpc.StatusCode.INTERNAL
            and (error.details() or "") == _SEND_FAILED_DETAILS)


class AsyncClient:
    """Client for asyncio: the same arguments and methods, awaited.

        async with AsyncClient("127.0.0.1:50051") as client:
            result = await client.diarize_file("meeting.wav")

    diarize_stream and stream_results take a sync or an async iterable of
    chunks (a sync one runs on the event loop: it must not block)."""

    def __init__(self, target: str = "127.0.0.1:50051", *, tls: bool = False,
                 ca_file: str | None = None, cert_file: str | None = None,
                 key_file: str | None = None, server_name: str | None = None,
                 token: str | None = None, token_file: str | None = None,
                 timeout_s: float | None = None, retry: RetryPolicy = RetryPolicy(),
                 on_retry: RetryCallback | None = None,
                 replay_bytes: int = _common.DEFAULT_REPLAY_BYTES):
        security = Security(tls, ca_file, cert_file, key_file, server_name, token, token_file)
        self._metadata = security.metadata()
        if security.uses_tls():
            self._channel = grpc.aio.secure_channel(target, security.credentials(),
                                                    options=security.channel_options())
        else:
            self._channel = grpc.aio.insecure_channel(target,
                                                      options=security.channel_options())
        self._stub = pb2_grpc.DiarizationStub(self._channel)
        self.timeout_s, self.retry, self.on_retry = timeout_s, retry, on_retry
        self.replay_bytes = replay_bytes

    async def close(self) -> None:
        await self._channel.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    def _attempts(self, timeout_s):
        return _Attempts(self.retry, self.timeout_s if timeout_s is None else timeout_s,
                         self.on_retry)

    async def _unary(self, method, request, timeout_s):
        attempts = self._attempts(timeout_s)
        while True:
            attempts.count += 1
            try:
                return await method(request, timeout=attempts.remaining_s(),
                                    metadata=self._metadata)
            except grpc.RpcError as e:
                await asyncio.sleep(attempts.next_wait_s(e))

    async def info(self, *, timeout_s: float | None = None) -> pb2.ServerInfo:
        return await self._unary(self._stub.GetInfo, pb2.GetInfoRequest(), timeout_s)

    async def create_voiceprint(self, source, speech=None, *, request_id: str = "",
                                timeout_s: float | None = None) -> Voiceprint:
        return Voiceprint.from_proto(await self._unary(
            self._stub.CreateVoiceprint,
            _common.voiceprint_request(source, speech, request_id), timeout_s))

    async def diarize_file(self, source, *, timeout_s: float | None = None,
                           **config) -> DiarizationResult:
        options = Options(**config)
        request, uri = _common.file_request(source, options)
        message = await self._unary(self._stub.DiarizeFile, request, timeout_s)
        return DiarizationResult.from_proto(message, uri=uri, exclusive=options.exclusive)

    async def stream_results(self, chunks, sample_rate: int, *, encoding: str | None = None,
                             channels: int | None = None, chunk_s: float = 0.1,
                             partials: bool = True, partial_interval_s: float = 0.0,
                             timeout_s: float | None = None,
                             **config) -> AsyncIterator[PartialResult | DiarizationResult]:
        options = Options(**config)
        source = StreamSource(chunks, sample_rate, options, encoding=encoding,
                              channels=channels, chunk_s=chunk_s, partials=partials,
                              partial_interval_s=partial_interval_s,
                              replay_bytes=self.replay_bytes)
        attempts = self._attempts(timeout_s)
        while True:
            attempts.count += 1
            attempt = source.new_attempt()
            final = None
            call = self._stub.Diarize(source.arequests(attempt),
                                      timeout=attempts.remaining_s(),
                                      metadata=self._metadata)
            try:
                async for response in call:
                    source.answered()
                    if response.HasField("partial"):
                        yield PartialResult.from_proto(response.partial)
                    elif response.HasField("final"):
                        final = DiarizationResult.from_proto(
                            response.final, uri=source.uri, exclusive=options.exclusive)
            except grpc.RpcError as e:
                if source.error is not None:
                    raise source.error from e
                await asyncio.sleep(attempts.next_wait_s(
                    e, source.replayable, send_failed=_send_failed(e, source)))
                continue
            finally:
                call.cancel()
            if final is None:
                raise DiarizationError(grpc.StatusCode.INTERNAL,
                                       "the stream ended OK without a final result",
                                       attempts=attempts.count)
            yield final
            return

    async def diarize_stream(self, chunks, sample_rate: int, *,
                             on_partial: Callable[[PartialResult], None] | None = None,
                             **kwargs) -> DiarizationResult:
        final = None
        async for item in self.stream_results(chunks, sample_rate,
                                              partials=on_partial is not None, **kwargs):
            if isinstance(item, PartialResult):
                on_partial(item)
            else:
                final = item
        return final
