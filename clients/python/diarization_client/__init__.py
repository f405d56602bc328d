"""Python client of the speaker diarization service: who spoke when.

    from diarization_client import Client

    with Client("127.0.0.1:50051") as client:
        result = client.diarize_file("meeting.wav", exclusive=True)
        for word in result.assign_words([(0.5, 0.9, "hello"), (1.0, 1.3, "there")]):
            print(word.speaker, word.text)

Client (sync) and AsyncClient (asyncio) share their arguments and methods:
info(), diarize_file(path | bytes), diarize_stream(chunks, sample_rate),
stream_results(...) (partials as an iterator) and create_voiceprint(path |
bytes, speech ranges) for known_speakers={label: Voiceprint}. Results:
DiarizationResult (to_rttm, speaker_at, speakers_at, assign_words,
exclusive_view, identities), PartialResult, Segment, Word, Identity. Failures raise DiarizationError (its gRPC code, the server's message
and retry hint); UNAVAILABLE and RESOURCE_EXHAUSTED are retried after the
server's hint within RetryPolicy's bounds. docs/api.md, "Python client".
"""
from .aio import AsyncClient
from ._common import DiarizationError
from .audio import FLOAT32, LINEAR16, wav_chunks
from .client import Client
from .results import DiarizationResult, Identity, PartialResult, Segment, Word
from .retry import NO_RETRY, RetryPolicy
from .voiceprints import Voiceprint

__all__ = [
    "AsyncClient", "Client", "DiarizationError", "DiarizationResult", "FLOAT32",
    "Identity", "LINEAR16", "NO_RETRY", "PartialResult", "RetryPolicy", "Segment",
    "Voiceprint", "Word", "wav_chunks",
]
__version__ = "1.1.0"
