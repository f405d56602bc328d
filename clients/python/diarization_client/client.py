"""The synchronous client (AsyncClient in aio.py has the same methods)."""
from __future__ import annotations

import time
from typing import Callable, Iterator

import grpc

from . import _common
from ._common import DiarizationError, Options, Security, StreamSource
from ._proto import diarization_pb2 as pb2
from ._proto import diarization_pb2_grpc as pb2_grpc
from .results import DiarizationResult, PartialResult
from .retry import RetryPolicy, retry_hint_s, retryable
from .voiceprints import Voiceprint

# on_retry(attempt, error, delay_s): called before each wait, e.g. to log it.
RetryCallback = Callable[[int, DiarizationError, float], None]


class _Attempts:
    """The retry loop's bookkeeping: attempts, waiting budget, deadline."""

    def __init__(self, policy: RetryPolicy, timeout_s: float | None,
                 on_retry: RetryCallback | None):
        self.policy, self.on_retry = policy, on_retry
        self.deadline = None if timeout_s is None else time.monotonic() + timeout_s
        self.count = 0
        self.waited_s = 0.0

    def remaining_s(self) -> float | None:
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def next_wait_s(self, error: grpc.RpcError, can_replay: bool = True,
                    send_failed: bool = False) -> float:
        """Seconds to wait before the next attempt; raises DiarizationError
        when the call has failed for good. send_failed: the call failed
        locally while sending (retried with backoff, see aio.py)."""
        failure = DiarizationError.from_rpc_error(error, self.count)
        if (not can_replay
                or not (send_failed or retryable(error.code(), error.details() or ""))
                or self.count >= self.policy.max_attempts):
            raise failure from error
        delay = self.policy.delay_s(self.count, retry_hint_s(error))
        remaining = self.remaining_s()
        if (self.waited_s + delay > self.policy.budget_s
                or (remaining is not None and delay >= remaining)):
            raise failure from error
        if self.on_retry is not None:
            self.on_retry(self.count, failure, delay)
        self.waited_s += delay
        return delay


class Client:
    """A connection to a diarization server.

        with Client("127.0.0.1:50051") as client:
            result = client.diarize_file("meeting.wav", exclusive=True)
            print(result.to_rttm())

    target: "host:port", "dns:///name:port" or "ipv4:a:p,b:p". Security:
    tls (system roots), ca_file, cert_file + key_file (mutual TLS),
    server_name (to verify the certificate against), token or token_file
    (a bearer token; the file's first line). timeout_s: the default deadline
    of each call, retries included (None: none). retry: RetryPolicy (NO_RETRY
    to fail at once). Every diarize method takes the config keywords:
    num_speakers, min_speakers, max_speakers, exclusive, fast, centroids,
    uri, request_id, known_speakers ({label: Voiceprint}),
    identification_threshold, both_views, stable_labels (docs/api.md,
    DiarizationConfig, "Identification", "Stable labels").
    """

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
            self._channel = grpc.secure_channel(target, security.credentials(),
                                                options=security.channel_options())
        else:
            self._channel = grpc.insecure_channel(target, options=security.channel_options())
        self._stub = pb2_grpc.DiarizationStub(self._channel)
        self.timeout_s, self.retry, self.on_retry = timeout_s, retry, on_retry
        self.replay_bytes = replay_bytes

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _attempts(self, timeout_s):
        return _Attempts(self.retry, self.timeout_s if timeout_s is None else timeout_s,
                         self.on_retry)

    def _unary(self, method, request, timeout_s):
        attempts = self._attempts(timeout_s)
        while True:
            attempts.count += 1
            try:
                return method(request, timeout=attempts.remaining_s(),
                              metadata=self._metadata)
            except grpc.RpcError as e:
                time.sleep(attempts.next_wait_s(e))

    def info(self, *, timeout_s: float | None = None) -> pb2.ServerInfo:
        """GetInfo: version, models, devices, limits and load (a ServerInfo
        message; docs/api.md, "GetInfo")."""
        return self._unary(self._stub.GetInfo, pb2.GetInfoRequest(), timeout_s)

    def create_voiceprint(self, source, speech=None, *, request_id: str = "",
                          timeout_s: float | None = None) -> Voiceprint:
        """CreateVoiceprint: the voiceprint of the one speaker of a WAV/FLAC/
        OGG file (a path or its bytes), or of its `speech` ranges
        ((start_s, end_s) pairs, joined in order) when given. Store it
        (Voiceprint.save/to_bytes) and pass it as known_speakers={label: vp}.
        FAILED_PRECONDITION (a DiarizationError): too little speech or no
        dominant speaker; the message gives the measured figures."""
        return Voiceprint.from_proto(self._unary(
            self._stub.CreateVoiceprint,
            _common.voiceprint_request(source, speech, request_id), timeout_s))

    def diarize_file(self, source, *, timeout_s: float | None = None,
                     **config) -> DiarizationResult:
        """A whole WAV/FLAC/OGG file (a path or its bytes) with DiarizeFile;
        the server decodes it. uri defaults to the file's stem."""
        options = Options(**config)
        request, uri = _common.file_request(source, options)
        message = self._unary(self._stub.DiarizeFile, request, timeout_s)
        return DiarizationResult.from_proto(message, uri=uri, exclusive=options.exclusive)

    def stream_results(self, chunks, sample_rate: int, *, encoding: str | None = None,
                       channels: int | None = None, chunk_s: float = 0.1,
                       partials: bool = True, partial_interval_s: float = 0.0,
                       timeout_s: float | None = None,
                       **config) -> Iterator[PartialResult | DiarizationResult]:
        """Streams audio (Diarize) and yields each PartialResult as it comes,
        then the DiarizationResult last.

        chunks: an iterable of numpy arrays or PCM bytes (audio.py), or one
        numpy array (sent in chunk_s pieces). A call refused before the server
        answered anything is sent again (the audio is kept in memory up to
        replay_bytes for that); after a partial result, a failure is final."""
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
            call = self._stub.Diarize(source.requests(attempt),
                                      timeout=attempts.remaining_s(),
                                      metadata=self._metadata)
            try:
                for response in call:
                    source.answered()
                    if response.HasField("partial"):
                        yield PartialResult.from_proto(response.partial)
                    elif response.HasField("final"):
                        final = DiarizationResult.from_proto(
                            response.final, uri=source.uri, exclusive=options.exclusive)
            except grpc.RpcError as e:
                if source.error is not None:
                    raise source.error from e
                time.sleep(attempts.next_wait_s(e, source.replayable))
                continue
            finally:
                call.cancel()  # a no-op once finished; ends it if the caller left
            if final is None:
                raise DiarizationError(grpc.StatusCode.INTERNAL,
                                       "the stream ended OK without a final result",
                                       attempts=attempts.count)
            yield final
            return

    def diarize_stream(self, chunks, sample_rate: int, *,
                       on_partial: Callable[[PartialResult], None] | None = None,
                       **kwargs) -> DiarizationResult:
        """stream_results' final result; partial results (asked for only
        when on_partial is given) go to on_partial."""
        final = None
        for item in self.stream_results(chunks, sample_rate,
                                        partials=on_partial is not None, **kwargs):
            if isinstance(item, PartialResult):
                on_partial(item)
            else:
                final = item
        return final
