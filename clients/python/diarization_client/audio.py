"""Audio chunks for a stream: numpy arrays or raw little-endian PCM bytes.

A chunk is one of:
  * a numpy array: int16 (sent as LINEAR16) or float32/float64 in [-1, 1]
    (sent as FLOAT32); 1-D for mono, 2-D (frames, channels) for several
    channels;
  * bytes-like raw PCM (bytes, bytearray, memoryview) in the encoding the
    caller names (LINEAR16 by default), channels interleaved.
The first chunk fixes the encoding and channel count of the stream.
"""
from __future__ import annotations

import wave
from typing import Iterator

try:  # numpy is optional (pip install diarization-client[numpy])
    import numpy as _np
except ImportError:  # pragma: no cover - exercised only without numpy
    _np = None

LINEAR16 = "linear16"
FLOAT32 = "float32"
_SAMPLE_BYTES = {LINEAR16: 2, FLOAT32: 4}


def is_array(chunk) -> bool:
    return _np is not None and isinstance(chunk, _np.ndarray)


def describe(chunk, encoding: str | None, channels: int | None) -> tuple[str, int]:
    """(encoding, channels) of a stream whose first chunk is `chunk`."""
    if is_array(chunk):
        if chunk.ndim not in (1, 2):
            raise ValueError(f"audio arrays are 1-D or (frames, channels), got shape {chunk.shape}")
        found = LINEAR16 if chunk.dtype == _np.int16 else FLOAT32
        if chunk.dtype.kind != "f" and found != LINEAR16:
            raise ValueError(f"audio arrays are int16, float32 or float64, got {chunk.dtype}")
        if encoding is not None and encoding != found:
            raise ValueError(f"encoding={encoding!r} but the array is {chunk.dtype}")
        found_channels = 1 if chunk.ndim == 1 else chunk.shape[1]
        if channels is not None and channels != found_channels:
            raise ValueError(f"channels={channels} but the array has {found_channels}")
        return found, found_channels
    if isinstance(chunk, (bytes, bytearray, memoryview)):
        encoding = encoding or LINEAR16
        if encoding not in _SAMPLE_BYTES:
            raise ValueError(f"encoding must be {LINEAR16!r} or {FLOAT32!r}, got {encoding!r}")
        return encoding, channels or 1
    raise TypeError(f"an audio chunk is a numpy array or bytes, got {type(chunk).__name__}")


def to_bytes(chunk, encoding: str, channels: int) -> bytes:
    """The chunk as little-endian PCM in the stream's encoding."""
    if is_array(chunk):
        found, found_channels = describe(chunk, None, None)
        if (found, found_channels) != (encoding, channels):
            raise ValueError(
                f"a chunk of {found} x {found_channels} channel(s) in a stream "
                f"of {encoding} x {channels}: every chunk must match the first")
        dtype = "<i2" if encoding == LINEAR16 else "<f4"
        return _np.ascontiguousarray(chunk, dtype=dtype).tobytes()
    data = bytes(chunk)
    frame = _SAMPLE_BYTES[encoding] * channels
    if len(data) % frame:
        raise ValueError(f"a chunk of {len(data)} bytes is not a whole number of "
                         f"{frame}-byte frames ({encoding}, {channels} channel(s))")
    return data


def split_array(array, sample_rate: int, chunk_s: float = 0.1) -> Iterator:
    """A numpy array (1-D, or frames x channels) in chunks of chunk_s."""
    step = max(1, int(round(sample_rate * chunk_s)))
    for i in range(0, len(array), step):
        yield array[i:i + step]


def wav_chunks(path: str, chunk_s: float = 0.1) -> tuple[int, int, Iterator[bytes]]:
    """(sample_rate, channels, chunks) of a 16-bit PCM WAV file, read with
    the standard library; other files: send them whole with diarize_file."""
    w = wave.open(path, "rb")
    if w.getsampwidth() != 2:
        w.close()
        raise ValueError(f"{path}: streaming reads 16-bit PCM WAV; use diarize_file")
    rate, channels = w.getframerate(), w.getnchannels()
    frames = max(1, int(round(rate * chunk_s)))

    def chunks():
        with w:
            while data := w.readframes(frames):
                yield data
    return rate, channels, chunks()
