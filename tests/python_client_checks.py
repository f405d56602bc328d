"""Checks of the installed diarization_client package against a real server
(run by tests/python_client_test.sh in a fresh venv holding the wheel).

The references are independent of the package: the C++ CLI's RTTM of the
same file (unary and stream), the server's own RTTM text, and hand-computed
word assignments. The server runs with --max_calls_per_peer=1, so a call
made while the CLI holds a paced stream open is refused with a retry hint.
"""
import argparse
import asyncio
import subprocess
import sys
import time
import wave

import grpc
import numpy as np

import diarization_client as dc
from diarization_client import (AsyncClient, Client, DiarizationError, NO_RETRY,
                                PartialResult, Segment, Word)

CHECKS = 0


def check(condition, what):
    global CHECKS
    if not condition:
        print(f"FAIL: {what}", file=sys.stderr)
        sys.exit(1)
    CHECKS += 1


def read_wav(path):
    with wave.open(path, "rb") as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1
        return w.getframerate(), np.frombuffer(w.readframes(w.getnframes()), "<i2")


def check_words():
    """assign_words and speaker_at on hand-made results, expected values
    worked out by hand from the documented rule."""
    r = dc.DiarizationResult(segments=[
        Segment(0.0, 4.0, "A"), Segment(3.0, 6.0, "B"), Segment(5.5, 8.0, "A"),
        Segment(10.0, 12.0, "C")])
    check(r.speaker_count == 3 and r.speakers == ["A", "B", "C"], "speakers of a hand-made result")
    words = [
        (1.0, 2.0, "only-A"),
        (3.2, 3.8, "tie-A-started-first"),      # A 0.6 s, B 0.6 s
        (3.5, 5.0, "mostly-B"),                 # A 0.5 s, B 1.5 s
        (5.6, 6.0, "tie-B-talking-longer"),     # B 0.4 s, A 0.4 s; B's segment began at 3.0, A's at 5.5
        (8.5, 9.0, "silence"),
        (3.9, 5.8, "B-over-split-A"),           # A 0.1 + 0.3 s, B 1.9 s
    ]
    got = [w.speaker for w in r.assign_words(words)]
    check(got == ["A", "A", "B", "B", None, "B"], f"assign_words: {got}")
    near = r.assign_words([(8.5, 9.0, "near-A"), (9.0, 9.5, "near-C"),
                           (8.9, 9.1, "equal-gap"), (13.5, 14.0, "too-far")],
                          max_distance_s=1.0)
    check([w.speaker for w in near] == ["A", "C", "A", None],
          f"assign_words(max_distance_s=1): {[w.speaker for w in near]}")
    # Overlap summed over a speaker's segments: A 0.4 + 0.4 s beats B 0.5 s.
    sums = dc.DiarizationResult(segments=[Segment(0, 1, "A"), Segment(1, 1.5, "B"),
                                          Segment(1.5, 2.5, "A")])
    check(sums.assign_words([(0.6, 1.9, "x")])[0].speaker == "A", "overlap summed per speaker")
    check(sums.assign_words([(0.8, 1.7, "x")])[0].speaker == "B", "B's 0.5 s beat A's 0.2 + 0.2 s")
    # A full tie (same overlap, same start): the smaller label.
    labels = dc.DiarizationResult(segments=[Segment(0, 2, "E"), Segment(0, 2, "D")])
    check(labels.assign_words([(0.5, 1.0, "x")])[0].speaker == "D", "label tie rule")
    # Instants, half-open segments.
    check(r.speaker_at(3.5) == "A" and r.speakers_at(3.5) == ["A", "B"], "speaker_at in overlap")
    check(r.speaker_at(4.0) == "B", "segments are half-open: A ended at 4.0")
    check(r.speaker_at(9.0) is None and r.speaker_at(12.0) is None, "speaker_at in silence")
    check(r.assign_words([(3.5, 3.5, "zero-length")])[0].speaker == "A", "a zero-length word")
    # Input forms: Whisper-like dicts ("word"), objects with attributes, Words.
    class W:
        start, end, text = 10.5, 11.0, "obj"
    forms = r.assign_words([{"start": 1.0, "end": 1.5, "word": "dict"}, W(),
                            Word(3.6, 4.9, "w")])
    check([(w.text, w.speaker) for w in forms] == [("dict", "A"), ("obj", "C"), ("w", "B")],
          f"word input forms: {forms}")
    try:
        r.assign_words([(2.0, 1.0, "backwards")])
        check(False, "a word that ends before it starts must be refused")
    except ValueError:
        check(True, "")
    check(r.to_rttm("m") ==
          "SPEAKER m 1 0.000 4.000 <NA> <NA> A <NA> <NA>\n"
          "SPEAKER m 1 3.000 3.000 <NA> <NA> B <NA> <NA>\n"
          "SPEAKER m 1 5.500 2.500 <NA> <NA> A <NA> <NA>\n"
          "SPEAKER m 1 10.000 2.000 <NA> <NA> C <NA> <NA>\n", "to_rttm of a hand-made result")


def check_replay():
    """The stream's replay buffer, without a server: a second attempt sends
    the config and every chunk the first one took, then the rest; past
    replay_bytes, or once the server answered, a stream cannot be replayed."""
    from diarization_client._common import Options, StreamSource

    def source(limit):
        chunks = (np.full(4, i, dtype=np.int16) for i in range(5))
        return StreamSource(chunks, 16000, Options(uri="x"), encoding=None, channels=None,
                            chunk_s=0.1, partials=False, partial_interval_s=0.0,
                            replay_bytes=limit)

    def audio(requests):
        return [np.frombuffer(r.audio, "<i2")[0] for r in requests if r.WhichOneof("request") == "audio"]
    src = source(1 << 20)
    first = src.requests(src.new_attempt())
    taken = [next(first) for _ in range(3)]  # config + 2 chunks, then "refused"
    check(taken[0].config.audio.sample_rate_hz == 16000 and audio(taken) == [0, 1],
          "first attempt's requests")
    second = list(src.requests(src.new_attempt()))
    check(second[0].HasField("config") and audio(second) == [0, 1, 2, 3, 4],
          f"the replay sends every chunk once, in order: {audio(second)}")
    check(list(first) == [], "a stale attempt's reader is stopped")
    small = source(10)  # 8 bytes per chunk: the second chunk overflows
    attempt = small.requests(small.new_attempt())
    [next(attempt) for _ in range(3)]
    check(not small.replayable, "past replay_bytes a stream cannot be replayed")
    answered = source(1 << 20)
    answered.answered()
    check(not answered.replayable, "once answered a stream cannot be replayed")


def check_unreachable():
    """UNAVAILABLE (nothing listens) is retried with exponential backoff (no
    hint), max_attempts in all, then raised with the attempts made."""
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    waits = []
    policy = dc.RetryPolicy(max_attempts=3, initial_backoff_s=0.1, jitter=0.2)
    with Client(f"127.0.0.1:{port}", timeout_s=30, retry=policy,
                on_retry=lambda n, err, delay: waits.append((n, err.code, delay))) as client:
        try:
            client.diarize_file(b"RIFF", uri="x")
            check(False, "a call to a closed port must fail")
        except DiarizationError as e:
            check(e.code == grpc.StatusCode.UNAVAILABLE and e.attempts == 3, f"closed port: {e!r}")
    check([(n, c) for n, c, _ in waits] == [(1, grpc.StatusCode.UNAVAILABLE),
                                           (2, grpc.StatusCode.UNAVAILABLE)], f"{waits}")
    check(0.1 <= waits[0][2] <= 0.12 + 1e-9 and 0.2 <= waits[1][2] <= 0.24 + 1e-9,
          f"backoff waits {waits}")


def hold_call(args, client):
    """Starts the CLI's paced stream of --wav and returns its process once
    the server holds it (the peer's one call slot taken). The slot of a call
    that just ended may not be free yet: a refused CLI is started again."""
    paced = [args.cli, f"--server={args.server}", "--mode=realtime", "--deadline_s=120", args.wav]
    for _ in range(10):
        end = time.monotonic() + 30
        while client.info().open_calls > 0 and time.monotonic() < end:
            time.sleep(0.05)
        cli = subprocess.Popen(paced, stdout=subprocess.DEVNULL)
        end = time.monotonic() + 20
        while client.info().open_calls < 1 and cli.poll() is None and time.monotonic() < end:
            time.sleep(0.05)
        time.sleep(1.0)  # a refused CLI exits at once; an admitted one streams for 5 s
        if cli.poll() is None:
            return cli
        time.sleep(1.0)
    check(False, "the CLI's paced stream was never admitted")


def check_retries(args, cpp_unary, cpp_stream, rate, samples):
    """A call refused while the CLI's paced stream holds the peer's one call
    slot: without retries it fails with the hint, with them it waits for
    the hint and succeeds; a refused stream is sent again from its start."""
    with Client(args.server, timeout_s=120) as client:
        cli = hold_call(args, client)
        with Client(args.server, timeout_s=60, retry=NO_RETRY) as once:
            try:
                once.diarize_file(args.wav)
                check(False, "a second call of the peer must be refused (max_calls_per_peer=1)")
            except DiarizationError as e:
                check(e.code == grpc.StatusCode.RESOURCE_EXHAUSTED, f"refusal code: {e}")
                check(e.retry_after_s is not None and e.retry_after_s >= 1.0,
                      f"refusal without the server's retry hint: {e.retry_after_s}")
                check(e.attempts == 1, "NO_RETRY made more than one attempt")
        retries = []
        with Client(args.server, timeout_s=120,
                    on_retry=lambda n, err, delay: retries.append((err, delay))) as patient:
            started = time.monotonic()
            result = patient.diarize_file(args.wav)
            waited = time.monotonic() - started
        check(result.rttm == cpp_unary, "the retried call's RTTM differs from the CLI's")
        check(len(retries) >= 1, "the refused call was not retried")
        for err, delay in retries:
            check(err.code == grpc.StatusCode.RESOURCE_EXHAUSTED, f"retried on {err}")
            check(err.retry_after_s is not None and delay >= err.retry_after_s,
                  f"waited {delay} s, less than the hint {err.retry_after_s} s")
        check(waited >= retries[0][1], "the call returned before the hinted wait")
        check(cli.wait(timeout=120) == 0, "the CLI's paced stream failed")

        # A stream refused at its start is replayed from the kept audio.
        cli = hold_call(args, client)
        retries.clear()
        with Client(args.server, timeout_s=120,
                    on_retry=lambda n, err, delay: retries.append((err, delay))) as patient:
            streamed = patient.diarize_stream(dc.audio.split_array(samples, rate, 0.25), rate,
                                              uri="short")
        check(len(retries) >= 1, "the refused stream was not retried")
        check(streamed.rttm == cpp_stream, "the replayed stream's RTTM differs from the CLI's")
        check(cli.wait(timeout=120) == 0, "the CLI's paced stream failed")
    print(f"retries: {len(retries)} after hints of "
          f"{[round(e.retry_after_s, 2) for e, _ in retries]} s")


async def check_async(args, cpp_unary, cpp_stream, rate, samples):
    async with AsyncClient(args.server, timeout_s=120) as client:
        info = await client.info()
        check(info.state == "serving", f"async GetInfo state {info.state}")
        result = await client.diarize_file(args.wav)
        check(result.rttm == cpp_unary, "async diarize_file differs from the CLI")

        async def chunks():  # an async source, float32 in [-1, 1]
            for piece in dc.audio.split_array(samples, rate, 0.5):
                await asyncio.sleep(0)
                yield piece.astype(np.float32) / 32768.0
        seen = []
        async for item in client.stream_results(chunks(), rate, uri="short",
                                                partial_interval_s=1.0):
            seen.append(item)
        check(isinstance(seen[-1], dc.DiarizationResult) and
              all(isinstance(p, PartialResult) for p in seen[:-1]),
              f"async stream_results: {seen}")
        check(seen[-1].rttm == cpp_stream, "async float32 stream differs from the CLI's stream")
        # Two calls at once on one channel.
        a, b = await asyncio.gather(client.diarize_file(args.wav),
                                    client.diarize_stream(samples, rate, uri="short"))
        check(a.rttm == cpp_unary and b.rttm == cpp_stream, "concurrent async calls")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--server", required=True)
    p.add_argument("--wav", required=True, help="a short clip (most calls)")
    p.add_argument("--long_wav", required=True, help="a clip long enough for partials")
    p.add_argument("--cpp_unary", required=True, help="the C++ CLI's unary RTTM of --wav")
    p.add_argument("--cpp_stream", required=True, help="the C++ CLI's stream RTTM of --wav")
    p.add_argument("--cpp_long_stream", required=True,
                   help="the C++ CLI's stream RTTM of --long_wav")
    p.add_argument("--cli", required=True, help="the C++ CLI, to hold a call open")
    args = p.parse_args()
    cpp_unary = open(args.cpp_unary).read()
    cpp_stream = open(args.cpp_stream).read()
    cpp_long_stream = open(args.cpp_long_stream).read()
    rate, samples = read_wav(args.wav)
    long_rate, long_samples = read_wav(args.long_wav)

    check_words()
    check_replay()
    check_unreachable()

    with Client(args.server, timeout_s=120) as client:
        info = client.info()
        check(info.state == "serving" and any(m.random_weights for m in info.models),
              f"GetInfo: {info.state}")
        # A file, by path and by bytes.
        result = client.diarize_file(args.wav)
        check(result.uri == "short" and result.rttm == cpp_unary,
              f"diarize_file differs from the CLI:\n{result.rttm}\n{cpp_unary}")
        check(result.to_rttm() == result.rttm, "to_rttm differs from the server's RTTM")
        check(result.speaker_count == len(result.speakers) >= 1, "speaker_count")
        check(result.audio_s > 0 and result.device == "cpu", "result fields")
        with open(args.wav, "rb") as f:
            by_bytes = client.diarize_file(f.read(), uri="short")
        check(by_bytes.rttm == cpp_unary, "diarize_file(bytes) differs")
        # The exclusive view: at most one speaker at a time.
        excl = client.diarize_file(args.wav, exclusive=True)
        check(excl.exclusive and all(a.end <= b.start for a, b in
                                     zip(excl.segments, excl.segments[1:])),
              "exclusive view has overlaps")
        check(len(excl.segments) >= 1, "no segments in the exclusive view")
        mid = (excl.segments[0].start + excl.segments[0].end) / 2
        check(excl.speaker_at(mid) == excl.segments[0].speaker, "speaker_at on a real result")

        # A stream from a numpy array with partials (callback): paced at four
        # times real time, so that windows are processed while audio flows.
        def paced(array, r, chunk_s=0.5, speed=4.0):
            for piece in dc.audio.split_array(array, r, chunk_s):
                time.sleep(chunk_s / speed)
                yield piece
        partials = []
        streamed = client.diarize_stream(paced(long_samples, long_rate), long_rate,
                                         uri="long", on_partial=partials.append,
                                         partial_interval_s=1.0)
        check(streamed.rttm == cpp_long_stream, "numpy stream differs from the CLI's stream")
        check(len(partials) >= 1, "no partial result")
        processed = [q.audio_processed_s for q in partials]
        check(processed == sorted(processed) and all(
            q.audio_processed_s <= q.audio_received_s for q in partials),
            f"partials: {[(q.audio_received_s, q.audio_processed_s) for q in partials]}")
        # The iterator form, int16 chunks of 0.2 s.
        items = list(client.stream_results(dc.audio.split_array(samples, rate, 0.2), rate,
                                           uri="short"))
        check(isinstance(items[-1], dc.DiarizationResult) and items[-1].rttm == cpp_stream,
              "stream_results' last item")
        # Bad input: INVALID_ARGUMENT is not retried; a bad chunk is the caller's error.
        try:
            client.diarize_file(args.wav, min_speakers=3, max_speakers=2)
            check(False, "contradictory hints must be refused")
        except DiarizationError as e:
            check(e.code == grpc.StatusCode.INVALID_ARGUMENT and e.attempts == 1, f"{e}")
        try:
            client.diarize_stream([b"\x00\x00\x00"], rate)
            check(False, "a chunk of a frame and a half must be refused")
        except ValueError:
            check(True, "")
        try:
            client.diarize_file(args.wav, timeout_s=0.001)
            check(False, "a 1 ms deadline must pass")
        except DiarizationError as e:
            check(e.code == grpc.StatusCode.DEADLINE_EXCEEDED, f"deadline: {e}")

    asyncio.run(check_async(args, cpp_unary, cpp_stream, rate, samples))
    check_retries(args, cpp_unary, cpp_stream, rate, samples)
    print(f"{CHECKS} checks passed")


if __name__ == "__main__":
    main()
