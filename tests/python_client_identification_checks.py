"""Voiceprints, identification and both views through the installed
diarization_client package, against the real server with the real
segmentation weights (run by tests/python_client_identification_test.sh).

The references are independent of the package: the C++ CLI's voiceprint
file, RTTMs, exclusive RTTM and identity lines for the same requests (the
CLI reads the voiceprint files the package wrote, and the package reads
the CLI's), the server's own RTTM text, and the fixture's stretch where
pyannote's reference has one speaker alone.
"""
import argparse
import asyncio
import random
import re
import struct
import subprocess
import sys
import time
import wave

import grpc
import numpy as np

from diarization_client import (AsyncClient, Client, DiarizationError, Identity,
                                PartialResult, Voiceprint)

CHECKS = 0


def check(condition, what):
    global CHECKS
    if not condition:
        print(f"FAIL: {what}", file=sys.stderr)
        sys.exit(1)
    CHECKS += 1


def cli(args, *flags):
    """The C++ CLI's (stdout, stderr) for one call; fails the test when it
    fails."""
    run = subprocess.run([args.cli, f"--server={args.server}", "--deadline_s=300", *flags],
                         capture_output=True, text=True, timeout=400)
    check(run.returncode == 0, f"CLI {flags}: exit {run.returncode}: {run.stderr}")
    return run.stdout, run.stderr


def cli_identities(stderr):
    """The CLI's "identity SPEAKER best=LABEL score=S matched|unmatched" lines."""
    return [line for line in stderr.splitlines() if line.startswith("identity ")]


def as_cli_lines(identities):
    """The package's identities in the CLI's format (clients/cli/voiceprints.cc)."""
    return ["identity %s best=%s score=%.4f %s" % (
        i.speaker, i.best_known_label or "-", i.best_score,
        "matched" if i.matched else "unmatched") for i in identities.values()]


def rttm_speech(rttm, a, b):
    """{speaker: seconds of speech inside [a, b]} from RTTM text."""
    out = {}
    for line in rttm.splitlines():
        f = line.split()
        start, dur, spk = float(f[3]), float(f[4]), f[7]
        overlap = min(start + dur, b) - max(start, a)
        if overlap > 0:
            out[spk] = out.get(spk, 0.0) + overlap
    return out


def relabelled(rttm_a, rttm_b):
    """True when two RTTMs have the same lines up to a one-to-one renaming
    of the speakers (same segment times)."""
    a = [line.split() for line in rttm_a.splitlines()]
    b = [line.split() for line in rttm_b.splitlines()]
    if len(a) != len(b):
        return False
    mapping, used = {}, set()
    for fa, fb in zip(sorted(a, key=lambda f: f[3:5]), sorted(b, key=lambda f: f[3:5])):
        if fa[:7] != fb[:7] or fa[8:] != fb[8:]:
            return False
        if fa[7] in mapping:
            if mapping[fa[7]] != fb[7]:
                return False
        elif fb[7] in used:
            return False
        else:
            mapping[fa[7]] = fb[7]
            used.add(fb[7])
    return True


def decoy(seed, sha):
    rng = random.Random(seed)
    floats = [rng.gauss(0.0, 1.0) for _ in range(256)]
    return Voiceprint(struct.pack("<256f", *floats), sha, 10.0, 1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--server", required=True)
    p.add_argument("--cli", required=True)
    p.add_argument("--clip", required=True, help="16 kHz mono WAV, 18 s")
    p.add_argument("--stretch", required=True, help="START-END of one speaker alone")
    p.add_argument("--tmp", required=True)
    args = p.parse_args()
    a, b = (float(x) for x in args.stretch.split("-"))
    tmp = args.tmp

    with Client(args.server, timeout_s=300) as client:
        info = client.info()
        sha = next(m.sha256 for m in info.models if m.role == "embedding")
        check(not info.models[0].random_weights, "the real segmentation weights")

        # Enrolment: the package's voiceprint is the one the CLI got for the
        # same request, byte for byte; each reads the other's file.
        cli(args, "--enroll", args.clip, f"--speech={args.stretch}", f"--out={tmp}/cli.vp")
        vp = client.create_voiceprint(args.clip, speech=[(a, b)])
        cli_vp = Voiceprint.load(f"{tmp}/cli.vp")
        check(vp == cli_vp, f"voiceprint differs from the CLI's: {vp.speech_seconds} "
                            f"{vp.model_sha256} vs {cli_vp.speech_seconds} {cli_vp.model_sha256}")
        with open(f"{tmp}/cli.vp", "rb") as f:
            check(vp.to_bytes() == f.read(), "to_bytes is not the CLI's file")
        check(vp.model_sha256 == sha and vp.version == 1, f"{vp.model_sha256} {vp.version}")
        check(len(vp.vector) == 256 and np.isfinite(vp.vector).all(), "256 finite floats")
        check(abs(vp.speech_seconds - (b - a)) < 1.0, f"speech_seconds {vp.speech_seconds}")
        with open(args.clip, "rb") as f:
            from_bytes = client.create_voiceprint(f.read(), speech=[(a, b)])
        check(from_bytes == vp, "create_voiceprint(bytes) differs from (path)")
        vp.save(f"{tmp}/py.vp")
        decoys = {"decoy_a": decoy(1, sha), "decoy_b": decoy(2, sha)}
        for label, d in decoys.items():
            d.save(f"{tmp}/{label}.vp")
        known = {"alice": vp, **decoys}
        known_flag = ("--known=alice=" + f"{tmp}/py.vp," +
                      ",".join(f"{label}={tmp}/{label}.vp" for label in decoys))

        # Identification among decoys, both views, against the CLI's answer
        # to the same request (which read the package's voiceprint files).
        result = client.diarize_file(args.clip, known_speakers=known, both_views=True)
        out, err = cli(args, "--mode=unary", known_flag, "--both_views",
                       f"--exclusive_out={tmp}/cli_excl.rttm", args.clip)
        # Kept for the example script's check (python_client_identification_test.sh).
        with open(f"{tmp}/cli_known.rttm", "w") as f:
            f.write(out)
        with open(f"{tmp}/cli_known.identities", "w") as f:
            f.write("".join(line + "\n" for line in cli_identities(err)))
        check(result.rttm == out, f"RTTM differs from the CLI's:\n{result.rttm}\nvs\n{out}")
        check(result.to_rttm() == result.rttm, "to_rttm is not the server's RTTM")
        with open(f"{tmp}/cli_excl.rttm") as f:
            cli_excl = f.read()
        check(cli_excl and result.exclusive_rttm == cli_excl,
              f"exclusive RTTM differs from the CLI's:\n{result.exclusive_rttm}\nvs\n{cli_excl}")
        check(result.exclusive_view().to_rttm() == cli_excl,
              "exclusive_view's segments are not the server's exclusive RTTM")
        check(result.exclusive_view().exclusive and not result.exclusive, "views' flags")
        check(result.exclusive_rttm != result.rttm, "the two views are the same text "
                                                    "(expected overlap in the regular view)")
        check(as_cli_lines(result.identities) == cli_identities(err),
              f"identities {result.identities} vs the CLI's {cli_identities(err)}")
        speech = rttm_speech(out, a, b)
        check(max(speech, key=speech.get) == "alice", f"the stretch's speaker: {speech}")
        check(result.known_labels == {"alice": "alice"}, f"known_labels {result.known_labels}")
        alice = result.identities["alice"]
        check(isinstance(alice, Identity) and alice.matched and alice.best_known_label == "alice"
              and 0.5 <= alice.best_score <= 1.0, f"alice: {alice}")
        check(not any(s.speaker.startswith("decoy") for s in result.segments),
              "a decoy matched a speaker")
        check(all(i.speaker.startswith("SPEAKER_") and not i.matched
                  for spk, i in result.identities.items() if spk != "alice"),
              f"others: {result.identities}")

        # A threshold above alice's score: nothing matched, and the labels
        # are the plain diarization's (the CLI without known speakers).
        threshold = min(1.0, alice.best_score + 0.01)
        strict = client.diarize_file(args.clip, known_speakers=known,
                                     identification_threshold=threshold)
        plain, _ = cli(args, "--mode=unary", args.clip)
        check(strict.rttm == plain, f"threshold {threshold}:\n{strict.rttm}\nvs\n{plain}")
        check(strict.identities and not strict.known_labels
              and not any(i.matched for i in strict.identities.values()),
              f"threshold {threshold}: {strict.identities}")
        check(not strict.exclusive_segments and not strict.exclusive_rttm,
              "an exclusive view that was not asked for")
        try:
            strict.exclusive_view()
            check(False, "exclusive_view of a result without one")
        except ValueError:
            pass
        try:
            client.diarize_file(args.clip, known_speakers={"x": vp.embedding})
            check(False, "raw bytes taken as a Voiceprint")
        except TypeError:
            pass

        # Malformed voiceprints: refused by the server, which stays healthy.
        bad = {"short": Voiceprint(vp.embedding[:1000], sha),
               "nan": Voiceprint(struct.pack("<f", float("nan")) + vp.embedding[4:], sha),
               "version": Voiceprint(vp.embedding, sha, version=2)}
        for what, voiceprint in bad.items():
            try:
                client.diarize_file(args.clip, known_speakers={"x": voiceprint})
                check(False, f"a {what} voiceprint was accepted")
            except DiarizationError as e:
                check(e.code == grpc.StatusCode.INVALID_ARGUMENT,
                      f"{what} voiceprint: {e.code} {e.details}")
        try:
            Voiceprint.from_bytes(b"\xff\xff\xff")
            check(False, "garbage parsed as a voiceprint")
        except ValueError:
            pass
        try:
            client.create_voiceprint(args.clip, speech=[(5.0, 2.0)])
            check(False, "a backwards speech range was accepted")
        except DiarizationError as e:
            check(e.code == grpc.StatusCode.INVALID_ARGUMENT, f"{e.code} {e.details}")
        check(client.info().version == info.version, "the server after the refusals")

        # A stream with partials, stable labels and both views: the final
        # result has the unary segments (up to renaming unmatched speakers),
        # alice keeps her label, and every partial carries both views and
        # identities.
        with wave.open(args.clip, "rb") as w:
            rate = w.getframerate()
            samples = np.frombuffer(w.readframes(w.getnframes()), "<i2")
        def paced(chunk_s=0.5, speed=3.0):
            # Three times real time: windows are processed while audio flows.
            step = int(rate * chunk_s)
            for i in range(0, len(samples), step):
                time.sleep(chunk_s / speed)
                yield samples[i:i + step]
        partials = []
        final = client.diarize_stream(paced(), rate, on_partial=partials.append,
                                      partial_interval_s=2.0,
                                      known_speakers=known, both_views=True,
                                      stable_labels=True, uri="clip")
        check(partials and all(isinstance(x, PartialResult) for x in partials),
              "no partial results")
        check(all(x.exclusive_segments and x.identities for x in partials if x.segments),
              "a partial without its exclusive view or identities")
        check(relabelled(final.rttm, out), f"stream final vs unary:\n{final.rttm}\nvs\n{out}")
        check(relabelled(final.exclusive_rttm, cli_excl), "stream exclusive vs unary")
        check(final.known_labels == {"alice": "alice"}, f"stream: {final.identities}")
        check(all(re.fullmatch(r"SPEAKER_\d+|alice", s.speaker) for x in partials
                  for s in x.segments), "a partial label outside SPEAKER_NN/alice")

    async def async_checks():
        async with AsyncClient(args.server, timeout_s=300) as aclient:
            avp = await aclient.create_voiceprint(args.clip, speech=[(a, b)])
            check(avp == vp, "AsyncClient's voiceprint differs")
            try:
                await aclient.diarize_file(args.clip, known_speakers={"x": bad["short"]})
                check(False, "AsyncClient: a short voiceprint was accepted")
            except DiarizationError as e:
                check(e.code == grpc.StatusCode.INVALID_ARGUMENT, f"async: {e.code}")

    asyncio.run(async_checks())
    print(f"{CHECKS} checks passed")


if __name__ == "__main__":
    main()
