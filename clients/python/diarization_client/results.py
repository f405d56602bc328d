"""Typed results: segments, the final result, partial results, words.

The tie rule used by `speaker_at` and `assign_words`, in one place:
a word (or an instant) goes to the speaker that overlaps it most; when
several overlap it equally (within 1 microsecond), to the one whose
overlapping speech started first (the speaker who was already talking);
when that is equal too, to the smallest label.
"""
from __future__ import annotations

import bisect
import dataclasses
from typing import Any, Iterable, Mapping, Sequence

# Two overlaps closer than this are a tie: word times from a transcriber are
# in milliseconds at best, and sums of float segment bounds differ in the
# last bits.
TIE_EPSILON_S = 1e-6


@dataclasses.dataclass(frozen=True)
class Segment:
    """One speaker turn, in seconds from the start of the audio."""
    start: float
    end: float
    speaker: str

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclasses.dataclass(frozen=True)
class Identity:
    """What identification found for one output speaker (a call with
    known_speakers): `speaker` is its label in the result (the known label
    when `matched`), `best_known_label` the known speaker scoring highest
    against it and `best_score` that cosine, matched or not (None and 0.0
    when it could not be scored)."""
    speaker: str
    best_known_label: str | None
    best_score: float
    matched: bool

    @classmethod
    def from_proto(cls, message) -> "Identity":
        return cls(message.speaker, message.best_known_label or None,
                   message.best_score, message.matched)


def _segments(messages) -> tuple[Segment, ...]:
    return tuple(Segment(s.start_s, s.end_s, s.speaker) for s in messages)


def _identities(messages) -> dict[str, Identity]:
    return {m.speaker: Identity.from_proto(m) for m in messages}


@dataclasses.dataclass(frozen=True)
class Word:
    """A transcribed word and, after `assign_words`, its speaker (None when
    no speech overlaps it)."""
    start: float
    end: float
    text: str
    speaker: str | None = None


def _word_from(item: Any) -> Word:
    """A Word from a Word, a (start, end, text) tuple, a mapping with
    start/end and text (or "word", as Whisper writes it), or an object with
    those attributes."""
    if isinstance(item, Word):
        return item
    if isinstance(item, Mapping):
        text = item["text"] if "text" in item else item.get("word", "")
        return Word(float(item["start"]), float(item["end"]), str(text))
    if isinstance(item, (tuple, list)):
        if len(item) < 2:
            raise ValueError(f"a word needs (start, end, text), got {item!r}")
        return Word(float(item[0]), float(item[1]),
                    str(item[2]) if len(item) > 2 else "")
    text = getattr(item, "text", None)
    if text is None:
        text = getattr(item, "word", "")
    return Word(float(item.start), float(item.end), str(text))


def _format_rttm(segments: Iterable[Segment], uri: str) -> str:
    # The server's format (engine/pipeline/rttm.cc, pyannote's): %.3f onset
    # and duration; C's printf and Python's % both round the exact binary
    # value, so the text is the same byte for byte.
    return "".join(
        "SPEAKER %s 1 %.3f %.3f <NA> <NA> %s <NA> <NA>\n"
        % (uri, s.start, s.end - s.start, s.speaker) for s in segments)


class _Timeline:
    """Segments sorted by start, with the running maximum of their ends, so
    that the segments overlapping [a, b] are found without a full scan."""

    def __init__(self, segments: Sequence[Segment]):
        self.segments = sorted(segments, key=lambda s: (s.start, s.end, s.speaker))
        self.starts = [s.start for s in self.segments]
        self.max_end = []
        running = float("-inf")
        for s in self.segments:
            running = max(running, s.end)
            self.max_end.append(running)

    def overlapping(self, a: float, b: float, closed: bool):
        """Segments with start < b and end > a (closed: start <= b, for an
        instant a == b: start <= t < end)."""
        hi = (bisect.bisect_right if closed else bisect.bisect_left)(self.starts, b)
        i = hi - 1
        while i >= 0 and self.max_end[i] > a:
            s = self.segments[i]
            if s.end > a:
                yield s
            i -= 1

    def best(self, a: float, b: float) -> str | None:
        """The speaker overlapping [a, b] most, by the module's tie rule."""
        instant = b <= a
        overlap: dict[str, float] = {}
        first_start: dict[str, float] = {}
        for s in self.overlapping(a, b, closed=instant):
            amount = 0.0 if instant else min(s.end, b) - max(s.start, a)
            if not instant and amount <= 0.0:
                continue
            overlap[s.speaker] = overlap.get(s.speaker, 0.0) + amount
            first_start[s.speaker] = min(first_start.get(s.speaker, s.start), s.start)
        if not overlap:
            return None
        most = max(overlap.values())
        tied = [spk for spk, v in overlap.items() if v >= most - TIE_EPSILON_S]
        return min(tied, key=lambda spk: (first_start[spk], spk))

    def nearest(self, a: float, b: float, within: float) -> str | None:
        """The speaker of the segment nearest to [a, b] within `within`
        seconds (a gap tie goes to the segment before the word)."""
        best_gap, best_key, best_speaker = None, None, None
        for s in self.segments:
            if s.end <= a:
                gap, before = a - s.end, 0
            elif s.start >= b:
                gap, before = s.start - b, 1
            else:
                continue
            key = (gap, before, s.start, s.speaker)
            if gap <= within and (best_key is None or key < best_key):
                best_gap, best_key, best_speaker = gap, key, s.speaker
        return best_speaker if best_gap is not None else None


@dataclasses.dataclass(frozen=True)
class DiarizationResult:
    """The final result of a call (DiarizeResult in docs/api.md).

    `exclusive` says which view the segments are: the exclusive one (at most
    one speaker at a time; ask for it with exclusive=True, as for aligning a
    transcript) or the regular one, in which overlapped speech has several
    speakers. Results can be built by hand: only `segments` is needed."""
    segments: tuple[Segment, ...]
    speaker_count: int = 0
    uri: str = "audio"
    exclusive: bool = False
    request_id: str = ""
    rttm: str = ""
    audio_s: float = 0.0
    processing_s: float = 0.0
    rtfx: float = 0.0
    device: str = ""
    centroids: Mapping[str, tuple[float, ...]] = dataclasses.field(default_factory=dict)
    # Only with both_views=True: the exclusive view and its RTTM (the
    # server's text), labelled as `segments`.
    exclusive_segments: tuple[Segment, ...] = ()
    exclusive_rttm: str = ""
    # Only with known_speakers: {speaker label in this result: Identity}.
    identities: Mapping[str, Identity] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "segments", tuple(self.segments))
        object.__setattr__(self, "exclusive_segments", tuple(self.exclusive_segments))
        if not self.speaker_count:
            object.__setattr__(self, "speaker_count", len(self.speakers))

    @property
    def speakers(self) -> list[str]:
        """The distinct labels, sorted."""
        return sorted({s.speaker for s in self.segments})

    @property
    def known_labels(self) -> dict[str, str]:
        """{speaker label: its known label} for the matched speakers (their
        label in the result is the known one)."""
        return {spk: i.best_known_label for spk, i in self.identities.items()
                if i.matched and i.best_known_label}

    def exclusive_view(self) -> "DiarizationResult":
        """The exclusive view as a result of its own (for assign_words,
        speaker_at, to_rttm): this result when it is exclusive already,
        else the exclusive segments of a call with both_views=True."""
        if self.exclusive:
            return self
        if not self.exclusive_segments and not self.exclusive_rttm:
            if self.segments:
                raise ValueError("this result has no exclusive view: ask for "
                                 "both_views=True (or exclusive=True)")
        return dataclasses.replace(
            self, segments=self.exclusive_segments, exclusive=True,
            rttm=self.exclusive_rttm, speaker_count=0, exclusive_segments=(),
            exclusive_rttm="")

    def to_rttm(self, uri: str | None = None) -> str:
        """RTTM lines as the server writes them (the same bytes as `rttm`
        for the uri the call sent)."""
        return _format_rttm(self.segments, uri if uri is not None else self.uri)

    def speakers_at(self, t: float) -> list[str]:
        """Every speaker active at time t (segments are [start, end)),
        ordered by the tie rule: the one talking longest first."""
        active = [s for s in _Timeline(self.segments).overlapping(t, t, closed=True)
                  if s.start <= t < s.end]
        first: dict[str, float] = {}
        for s in active:
            first[s.speaker] = min(first.get(s.speaker, s.start), s.start)
        return sorted(first, key=lambda spk: (first[spk], spk))

    def speaker_at(self, t: float) -> str | None:
        """The speaker at time t, None in silence; in overlapped speech (the
        regular view) the one who started talking first (the tie rule)."""
        speakers = self.speakers_at(t)
        return speakers[0] if speakers else None

    def assign_words(self, words: Iterable[Any], *,
                     max_distance_s: float = 0.0) -> list[Word]:
        """Gives each word the speaker whose segments overlap it most.

        words: Word objects, (start, end, text) tuples, dicts with start,
        end and text (or "word", Whisper's key), or objects with those
        attributes. Ties: see the module docstring. A word of zero length
        takes `speaker_at(start)`. A word that overlaps no segment gets
        None, or with max_distance_s > 0 the speaker of the nearest segment
        within that gap (on equal gaps, the segment before it). Use an
        exclusive result for a transcript: in the regular view, overlapped
        speech counts for every speaker in it. Returns new Words, in the
        order given."""
        timeline = _Timeline(self.segments)
        out = []
        for item in words:
            word = _word_from(item)
            if word.end < word.start:
                raise ValueError(f"word {word.text!r} ends ({word.end}) before "
                                 f"it starts ({word.start})")
            speaker = timeline.best(word.start, word.end)
            if speaker is None and max_distance_s > 0:
                speaker = timeline.nearest(word.start, word.end, max_distance_s)
            out.append(dataclasses.replace(word, speaker=speaker))
        return out

    @classmethod
    def from_proto(cls, message, *, uri: str, exclusive: bool) -> "DiarizationResult":
        return cls(
            segments=_segments(message.segments),
            speaker_count=message.speaker_count, uri=uri, exclusive=exclusive,
            request_id=message.request_id, rttm=message.rttm,
            audio_s=message.audio_s, processing_s=message.processing_s,
            rtfx=message.rtfx, device=message.device,
            centroids={c.speaker: tuple(c.embedding) for c in message.centroids},
            exclusive_segments=_segments(message.exclusive_segments),
            exclusive_rttm=message.exclusive_rttm,
            identities=_identities(message.identities))


@dataclasses.dataclass(frozen=True)
class PartialResult:
    """A provisional view while a stream flows: labels may be renamed or
    merged by the final result (unless stable_labels=True: docs/api.md,
    "Stable labels"). exclusive_segments: only with both_views=True;
    identities: only with known_speakers, as in DiarizationResult."""
    segments: tuple[Segment, ...]
    audio_received_s: float
    audio_processed_s: float
    request_id: str = ""
    exclusive_segments: tuple[Segment, ...] = ()
    identities: Mapping[str, Identity] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_proto(cls, message) -> "PartialResult":
        return cls(_segments(message.segments),
                   message.audio_received_s, message.audio_processed_s,
                   message.request_id,
                   exclusive_segments=_segments(message.exclusive_segments),
                   identities=_identities(message.identities))
