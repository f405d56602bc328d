"""What Client and AsyncClient share: channel security, call metadata,
request building, the error type and the replay buffer of a stream."""
from __future__ import annotations

import dataclasses
import os
import pathlib
import threading
from typing import Any, Mapping

import grpc

from . import audio
from ._proto import diarization_pb2 as pb2
from .retry import retry_hint_s
from .voiceprints import known_speakers_proto, speech_ranges_proto

# A stream's audio is kept in memory until the server's first answer, so that
# a refused call can be sent again; past this much, a refusal is final.
DEFAULT_REPLAY_BYTES = 64 << 20
# Messages of any size (the server has its own max_message_bytes).
CHANNEL_OPTIONS = [("grpc.max_receive_message_length", -1),
                   ("grpc.max_send_message_length", -1)]


class DiarizationError(Exception):
    """A call that failed for good: its gRPC status, the server's message,
    its retry hint (seconds, or None) and how many attempts were made."""

    def __init__(self, code: grpc.StatusCode, details: str,
                 retry_after_s: float | None = None, attempts: int = 1):
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details
        self.retry_after_s = retry_after_s
        self.attempts = attempts

    @classmethod
    def from_rpc_error(cls, error, attempts: int) -> "DiarizationError":
        return cls(error.code(), error.details() or "", retry_hint_s(error), attempts)


@dataclasses.dataclass(frozen=True)
class Security:
    """TLS (system roots or ca_file), mutual TLS (cert_file + key_file) and
    a bearer token (token, or the first line of token_file)."""
    tls: bool = False
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    server_name: str | None = None
    token: str | None = None
    token_file: str | None = None

    def uses_tls(self) -> bool:
        return bool(self.tls or self.ca_file or self.cert_file or self.key_file)

    def credentials(self) -> grpc.ChannelCredentials:
        if bool(self.cert_file) != bool(self.key_file):
            raise ValueError("cert_file and key_file go together (mutual TLS)")
        return grpc.ssl_channel_credentials(
            root_certificates=_read(self.ca_file, "ca_file"),
            private_key=_read(self.key_file, "key_file"),
            certificate_chain=_read(self.cert_file, "cert_file"))

    def channel_options(self) -> list[tuple[str, Any]]:
        options = list(CHANNEL_OPTIONS)
        if self.server_name:
            options.append(("grpc.ssl_target_name_override", self.server_name))
        return options

    def metadata(self) -> tuple[tuple[str, str], ...]:
        """The authorization metadata of every call (empty without a token).

        Plain call metadata, not call credentials, so that it also reaches a
        plaintext loopback server (docs/api.md, "Authentication")."""
        token = self.token
        if self.token_file:
            if token:
                raise ValueError("give token or token_file, not both")
            raw = _read(self.token_file, "token_file") or b""
            token = raw.decode().split("\n")[0].strip()
            if not token:
                raise ValueError(f"token_file {self.token_file} is empty")
        return (("authorization", "Bearer " + token),) if token else ()


def _read(path: str | None, what: str) -> bytes | None:
    if not path:
        return None
    try:
        return pathlib.Path(path).read_bytes()
    except OSError as e:
        raise ValueError(f"cannot read {what} {path}: {e.strerror}") from e


def safe_uri(name: str) -> str:
    """The server's rule for uri: 1-128 printable ASCII characters, no
    spaces (others become '_'); the same as the CLI's."""
    name = "".join(c if "!" <= c <= "~" else "_" for c in name)[:128]
    return name or "audio"


def uri_for_path(path: str | os.PathLike) -> str:
    return safe_uri(pathlib.Path(path).stem)


@dataclasses.dataclass(frozen=True)
class Options:
    """The config fields of a call (DiarizationConfig in docs/api.md)."""
    num_speakers: int = 0
    min_speakers: int = 0
    max_speakers: int = 0
    exclusive: bool = False
    fast: bool = False
    centroids: bool = False
    uri: str | None = None
    request_id: str = ""
    # Identification and views (docs/api.md, "Identification", "Stable
    # labels"): {label: Voiceprint}, the cosine threshold (0: the server's
    # default), the exclusive view beside the regular one, labels that stay
    # put across a stream's partials and final.
    known_speakers: Mapping[str, Any] | None = None
    identification_threshold: float = 0.0
    both_views: bool = False
    stable_labels: bool = False

    def config(self, uri: str) -> pb2.DiarizationConfig:
        c = pb2.DiarizationConfig(request_id=self.request_id, uri=uri)
        c.speakers.num_speakers = self.num_speakers
        c.speakers.min_speakers = self.min_speakers
        c.speakers.max_speakers = self.max_speakers
        c.options.exclusive = self.exclusive
        c.options.return_centroids = self.centroids
        c.options.quality = pb2.FAST if self.fast else pb2.ACCURATE
        c.options.both_views = self.both_views
        c.options.stable_labels = self.stable_labels
        c.known_speakers.extend(known_speakers_proto(self.known_speakers))
        c.identification_threshold = self.identification_threshold
        return c


def _file_bytes(source) -> bytes:
    """The bytes of a file given as a path or as its bytes."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    try:
        return pathlib.Path(source).read_bytes()
    except OSError as e:
        raise ValueError(f"cannot read {source}: {e.strerror}") from e


def file_request(source, options: Options) -> tuple[pb2.DiarizeFileRequest, str]:
    """A DiarizeFile request for a path or the bytes of a WAV/FLAC/OGG file."""
    data = _file_bytes(source)
    if isinstance(source, (bytes, bytearray, memoryview)):
        uri = options.uri or "audio"
    else:
        uri = options.uri or uri_for_path(source)
    uri = safe_uri(uri)
    config = options.config(uri)
    config.audio.encoding = pb2.ENCODED
    return pb2.DiarizeFileRequest(config=config, audio=data), uri


def voiceprint_request(source, speech, request_id: str) -> pb2.CreateVoiceprintRequest:
    """A CreateVoiceprint request for a path or the bytes of a WAV/FLAC/OGG
    file and optional (start_s, end_s) speech ranges."""
    data = _file_bytes(source)
    # Of the recording's config the server uses only audio and speakers.
    recording = pb2.DiarizeFileRequest(audio=data)
    recording.config.audio.encoding = pb2.ENCODED
    recording.config.request_id = request_id
    return pb2.CreateVoiceprintRequest(recording=recording,
                                       speech=speech_ranges_proto(speech))


class StreamSource:
    """The requests of a stream, replayable: chunks are converted once and
    kept (up to `replay_bytes`) until the server first answers, so that an
    attempt refused before that can be sent again from the start.

    The source is an iterator (or, for AsyncClient, an async iterator too).
    Thread-safe: gRPC's sync API reads requests on its own thread, and a
    failed attempt's reader may still be inside next() when the retry starts;
    a stale attempt's reader is stopped.
    """

    def __init__(self, chunks, sample_rate: int, options: Options, *,
                 encoding: str | None, channels: int | None, chunk_s: float,
                 partials: bool, partial_interval_s: float, replay_bytes: int):
        if audio.is_array(chunks):
            chunks = audio.split_array(chunks, sample_rate, chunk_s)
        self.is_async = hasattr(chunks, "__aiter__")
        self._source = chunks.__aiter__() if self.is_async else iter(chunks)
        self._lock = threading.Lock()
        self._kept: list[bytes] = []  # chunks pulled so far, while replayable
        self._kept_bytes = 0
        self._consumed = 0  # chunks pulled from the source
        self._first: bytes | None = None  # pulled for the config, not yet sent
        self._replayable = True
        self._attempt = 0
        self._done = False
        self._config = None
        self.uri = safe_uri(options.uri or "audio")
        self._options = options
        self._sample_rate = sample_rate
        self._encoding, self._channels = encoding, channels
        self._partials = partials
        self._partial_interval_s = partial_interval_s
        self._replay_bytes = replay_bytes

    def answered(self) -> None:
        """The server answered: the call can no longer be replayed."""
        with self._lock:
            self._replayable, self._kept, self._kept_bytes = False, [], 0

    @property
    def replayable(self) -> bool:
        return self._replayable

    def new_attempt(self) -> int:
        with self._lock:
            self._attempt += 1
            return self._attempt

    # One step of an attempt: ("stop", None), ("send", request), or
    # ("pull", None) when the next chunk must come from the source.
    def _plan(self, attempt: int, index: int):
        if attempt != self._attempt:
            return "stop", None
        if index == 0:
            return ("send", self._config) if self._config is not None else ("pull", None)
        if index - 1 < len(self._kept):
            return "send", pb2.DiarizeRequest(audio=self._kept[index - 1])
        if index - 1 < self._consumed:
            return "stop", None  # not kept: this attempt cannot be replayed
        if self._first is not None:
            return "send", self._take_first()
        return ("stop", None) if self._done else ("pull", None)

    def _take_first(self) -> pb2.DiarizeRequest:
        data, self._first = self._first, None
        self._consumed += 1
        self._keep(data)
        return pb2.DiarizeRequest(audio=data)

    def _accept(self, index: int, chunk, end: bool):
        """Takes a chunk pulled from the source; the request to send, or
        None at the end of the audio."""
        if end:
            if self._config is None:
                raise ValueError("the audio iterator gave no chunks")
            self._done = True
            return None
        if self._config is None:
            enc, ch = audio.describe(chunk, self._encoding, self._channels)
            self._encoding, self._channels = enc, ch
            config = self._options.config(self.uri)
            config.audio.encoding = pb2.LINEAR16 if enc == audio.LINEAR16 else pb2.FLOAT32
            config.audio.sample_rate_hz = self._sample_rate
            config.audio.channel_count = ch
            config.options.partial_results = self._partials
            config.options.partial_interval_s = self._partial_interval_s
            self._config = pb2.DiarizeRequest(config=config)
            self._first = audio.to_bytes(chunk, enc, ch)
            return self._config
        data = audio.to_bytes(chunk, self._encoding, self._channels)
        self._consumed += 1
        self._keep(data)
        return pb2.DiarizeRequest(audio=data)

    def _keep(self, data: bytes) -> None:
        if not self._replayable:
            return
        self._kept.append(data)
        self._kept_bytes += len(data)
        if self._kept_bytes > self._replay_bytes:
            self._replayable, self._kept, self._kept_bytes = False, [], 0

    # An exception raised while reading the source (a bad chunk): gRPC only
    # cancels the call, so the client re-raises this one instead.
    error: Exception | None = None

    def requests(self, attempt: int):
        """The requests of attempt `attempt` (a generator for gRPC)."""
        try:
            yield from self._requests(attempt)
        except Exception as e:
            self.error = e
            raise

    def _requests(self, attempt: int):
        index = 0
        while True:
            with self._lock:
                action, request = self._plan(attempt, index)
                if action == "pull":
                    try:
                        chunk, end = next(self._source), False
                    except StopIteration:
                        chunk, end = None, True
                    request = self._accept(index, chunk, end)
            if request is None or action == "stop":
                return
            index += 1
            yield request

    async def arequests(self, attempt: int):
        """The same for grpc.aio, from a sync or an async source (one event
        loop: no lock needed)."""
        try:
            async for request in self._arequests(attempt):
                yield request
        except Exception as e:
            self.error = e
            raise

    async def _arequests(self, attempt: int):
        index = 0
        while True:
            action, request = self._plan(attempt, index)
            if action == "pull":
                try:
                    if self.is_async:
                        chunk, end = await self._source.__anext__(), False
                    else:
                        chunk, end = next(self._source), False
                except (StopIteration, StopAsyncIteration):
                    chunk, end = None, True
                # Kept even when this attempt went stale meanwhile: the
                # retry finds it among the kept chunks.
                request = self._accept(index, chunk, end)
                if attempt != self._attempt:
                    return
            if request is None or action == "stop":
                return
            index += 1
            yield request
