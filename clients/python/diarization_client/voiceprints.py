"""Voiceprints (CreateVoiceprint) and the known speakers of a call.

A voiceprint file is one serialized diarization.v1.Voiceprint message
(binary protobuf), as CreateVoiceprint returned it: the same files as the
C++ CLI's `--enroll ... --out FILE` and `--known LABEL=FILE`, so either
client can use the other's. No format of our own: the proto is already
versioned (`version`) and the server checks everything in it.
"""
from __future__ import annotations

import array
import dataclasses
import os
import pathlib
import sys
from typing import Iterable, Mapping

from google.protobuf.message import DecodeError

from ._proto import diarization_pb2 as pb2


@dataclasses.dataclass(frozen=True)
class Voiceprint:
    """A speaker's voiceprint: `embedding` (float32 little-endian bytes, the
    embedding network's dimension), the `model_sha256` of the weights that
    made it (valid only with them), the `speech_seconds` it was made from
    and the format `version`. Store it with your user record (`save`,
    `to_bytes`) and pass it in `known_speakers={label: voiceprint}`."""
    embedding: bytes
    model_sha256: str
    speech_seconds: float = 0.0
    version: int = 1

    @property
    def vector(self) -> tuple[float, ...]:
        """The embedding as floats (the bytes are little-endian float32;
        a trailing partial float is ignored: the server refuses such a
        voiceprint anyway)."""
        values = array.array("f")
        values.frombytes(self.embedding[:len(self.embedding) // 4 * 4])
        if sys.byteorder != "little":
            values.byteswap()
        return tuple(values)

    def to_proto(self) -> pb2.Voiceprint:
        return pb2.Voiceprint(embedding=self.embedding, model_sha256=self.model_sha256,
                              speech_seconds=self.speech_seconds, version=self.version)

    @classmethod
    def from_proto(cls, message: pb2.Voiceprint) -> "Voiceprint":
        return cls(bytes(message.embedding), message.model_sha256,
                   message.speech_seconds, message.version)

    def to_bytes(self) -> bytes:
        """The serialized Voiceprint message (the file format)."""
        return self.to_proto().SerializeToString()

    @classmethod
    def from_bytes(cls, data: bytes) -> "Voiceprint":
        """Parses a serialized Voiceprint message; ValueError when it is not
        one. The contents are checked by the server when used."""
        message = pb2.Voiceprint()
        try:
            message.ParseFromString(bytes(data))
        except DecodeError as e:
            raise ValueError(f"not a serialized Voiceprint message: {e}") from e
        return cls.from_proto(message)

    def save(self, path: str | os.PathLike) -> None:
        """Writes the voiceprint file (the CLI's format)."""
        pathlib.Path(path).write_bytes(self.to_bytes())

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Voiceprint":
        """Reads a voiceprint file written by `save` or the CLI's --out."""
        try:
            data = pathlib.Path(path).read_bytes()
        except OSError as e:
            raise ValueError(f"cannot read voiceprint {path}: {e.strerror}") from e
        try:
            return cls.from_bytes(data)
        except ValueError as e:
            raise ValueError(f"voiceprint {path}: {e}") from e


def known_speakers_proto(known: Mapping[str, Voiceprint | pb2.Voiceprint] | None
                         ) -> list[pb2.KnownSpeaker]:
    """{label: voiceprint} as KnownSpeaker messages, in the mapping's order.
    Labels and voiceprints are checked by the server (docs/api.md,
    "Identification")."""
    out = []
    for label, voiceprint in (known or {}).items():
        if isinstance(voiceprint, Voiceprint):
            message = voiceprint.to_proto()
        elif isinstance(voiceprint, pb2.Voiceprint):
            message = voiceprint
        else:
            raise TypeError(f"known speaker {label!r}: expected a Voiceprint, got "
                            f"{type(voiceprint).__name__}")
        out.append(pb2.KnownSpeaker(label=str(label), voiceprint=message))
    return out


def speech_ranges_proto(speech: Iterable[tuple[float, float]] | None
                        ) -> list[pb2.TimeRange]:
    """(start_s, end_s) pairs as TimeRange messages (checked by the server)."""
    out = []
    for item in speech or ():
        try:
            start, end = item
        except (TypeError, ValueError) as e:
            raise ValueError(f"a speech range is (start_s, end_s), got {item!r}") from e
        out.append(pb2.TimeRange(start_s=float(start), end_s=float(end)))
    return out
