#!/usr/bin/env python3
"""Example: the diarization_client package as a small command-line client.

  pip install diarization_client-*.whl     (clients/python/README.md)
  python3 diarize_client.py --server 127.0.0.1:50051 FILE.wav
  python3 diarize_client.py --server ... --mode unary FILE.flac
  python3 diarize_client.py --server ... --info
  python3 diarize_client.py --server ... --enroll ALICE.wav [--speech 40-75] --out alice.vp
  python3 diarize_client.py --server ... --known alice=alice.vp,bob=bob.vp \
      [--threshold 0.6] [--both_views --exclusive_out X.rttm] [--stable_labels] FILE.wav
  python3 diarize_client.py --server HOST:PORT --tls_ca ca.pem \
      [--tls_cert client.pem --tls_key client.key] [--token_file TOKEN] FILE.wav

Streaming reads a 16-bit PCM WAV file; --mode unary sends any file the
server decodes, whole. Prints RTTM (default) or JSON; with --known, one
"identity SPEAKER best=LABEL score=S matched|unmatched" line per speaker to
stderr, as the C++ client. Voiceprint files are the C++ client's. Exit codes as the C++
diarize_client (docs/api.md): 0 ok, 2 usage, 3 INVALID_ARGUMENT,
4 UNAVAILABLE/RESOURCE_EXHAUSTED (after the retries), 5 DEADLINE_EXCEEDED,
6 UNAUTHENTICATED/PERMISSION_DENIED, 1 other.
"""
import argparse
import dataclasses
import json
import sys
import wave

import grpc
from diarization_client import (Client, DiarizationError, NO_RETRY, RetryPolicy, Voiceprint,
                                wav_chunks)

EXIT_CODES = {
    grpc.StatusCode.INVALID_ARGUMENT: 3,
    grpc.StatusCode.UNAVAILABLE: 4,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 4,
    grpc.StatusCode.DEADLINE_EXCEEDED: 5,
    grpc.StatusCode.UNAUTHENTICATED: 6,
    grpc.StatusCode.PERMISSION_DENIED: 6,
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("file", nargs="?")
    p.add_argument("--server", default="127.0.0.1:50051")
    p.add_argument("--mode", choices=["stream", "unary"], default="stream")
    p.add_argument("--output", choices=["rttm", "json"], default="rttm")
    p.add_argument("--info", action="store_true", help="print GetInfo")
    p.add_argument("--num_speakers", type=int, default=0)
    p.add_argument("--min_speakers", type=int, default=0)
    p.add_argument("--max_speakers", type=int, default=0)
    p.add_argument("--exclusive", action="store_true")
    p.add_argument("--partial", action="store_true", help="partial results to stderr")
    p.add_argument("--request_id", default="")
    p.add_argument("--enroll", metavar="FILE", help="make a voiceprint of FILE's speaker")
    p.add_argument("--out", help="where --enroll writes the voiceprint")
    p.add_argument("--speech", default="", help="with --enroll: START-END[,START-END...]")
    p.add_argument("--known", default="", help="LABEL=VOICEPRINT[,LABEL=VOICEPRINT...]")
    p.add_argument("--threshold", type=float, default=0.0,
                   help="identification threshold (0: the server's default)")
    p.add_argument("--both_views", action="store_true")
    p.add_argument("--exclusive_out", help="write the exclusive view's RTTM here")
    p.add_argument("--stable_labels", action="store_true")
    p.add_argument("--deadline_s", type=float, default=None)
    p.add_argument("--retries", type=int, default=5,
                   help="retries of UNAVAILABLE/RESOURCE_EXHAUSTED (0: none)")
    p.add_argument("--tls", action="store_true", help="TLS with the system's CA roots")
    p.add_argument("--tls_ca", default=None)
    p.add_argument("--tls_cert", default=None)
    p.add_argument("--tls_key", default=None)
    p.add_argument("--tls_server_name", default=None)
    p.add_argument("--token", default=None, help="visible in ps: prefer --token_file")
    p.add_argument("--token_file", default=None)
    args = p.parse_args()
    if not args.info and not args.file and not args.enroll:
        p.print_usage(sys.stderr)
        return 2
    if bool(args.enroll) != bool(args.out):
        print("diarize_client.py: --enroll FILE and --out VOICEPRINT go together",
              file=sys.stderr)
        return 2
    retry = RetryPolicy(max_attempts=args.retries + 1) if args.retries > 0 else NO_RETRY
    try:
        known = {}
        for entry in filter(None, args.known.split(",")):
            label, sep, path = entry.partition("=")
            if not sep:
                raise ValueError(f"--known entry {entry!r} is not LABEL=VOICEPRINT")
            known[label] = Voiceprint.load(path)
        speech = [tuple(float(x) for x in r.split("-", 1))
                  for r in filter(None, args.speech.split(","))]
    except ValueError as e:
        print(f"diarize_client.py: {e}", file=sys.stderr)
        return 2
    config = dict(num_speakers=args.num_speakers, min_speakers=args.min_speakers,
                  max_speakers=args.max_speakers, exclusive=args.exclusive,
                  request_id=args.request_id, known_speakers=known,
                  identification_threshold=args.threshold,
                  both_views=args.both_views or bool(args.exclusive_out),
                  stable_labels=args.stable_labels)
    try:
        with Client(args.server, tls=args.tls, ca_file=args.tls_ca,
                    cert_file=args.tls_cert, key_file=args.tls_key,
                    server_name=args.tls_server_name, token=args.token,
                    token_file=args.token_file, timeout_s=args.deadline_s,
                    retry=retry) as client:
            if args.info:
                info = client.info()
                print(json.dumps({
                    "version": info.version, "state": info.state,
                    "models": [{"role": m.role, "name": m.name,
                                "random_weights": m.random_weights} for m in info.models],
                    "devices": [d.name for d in info.devices]}, indent=1))
                return 0
            if args.enroll:
                voiceprint = client.create_voiceprint(args.enroll, speech,
                                                      request_id=args.request_id)
                voiceprint.save(args.out)
                print(f"voiceprint of {voiceprint.speech_seconds:.2f} s of speech written "
                      f"to {args.out} (model {voiceprint.model_sha256})", file=sys.stderr)
                return 0
            if args.mode == "unary":
                result = client.diarize_file(args.file, **config)
            else:
                rate, channels, chunks = wav_chunks(args.file)
                show = (lambda q: print(
                    f"partial: received {q.audio_received_s:.1f} s, processed "
                    f"{q.audio_processed_s:.1f} s, {len(q.segments)} segments",
                    file=sys.stderr)) if args.partial else None
                result = client.diarize_stream(
                    chunks, rate, channels=channels, on_partial=show,
                    uri=_stem(args.file), **config)
    except DiarizationError as e:
        print(f"diarize_client.py: {e}", file=sys.stderr)
        return EXIT_CODES.get(e.code, 1)
    except (OSError, ValueError, wave.Error) as e:
        print(f"diarize_client.py: {e}", file=sys.stderr)
        return 2
    if args.output == "json":
        print(json.dumps({k: v for k, v in dataclasses.asdict(result).items()
                          if k != "centroids"}, indent=1))
    else:
        sys.stdout.write(result.rttm)
        for i in result.identities.values():
            print("identity %s best=%s score=%.4f %s" % (
                i.speaker, i.best_known_label or "-", i.best_score,
                "matched" if i.matched else "unmatched"), file=sys.stderr)
    if args.exclusive_out:
        with open(args.exclusive_out, "w") as f:
            f.write(result.exclusive_rttm)
    return 0


def _stem(path: str) -> str:
    import pathlib
    return pathlib.Path(path).stem


if __name__ == "__main__":
    sys.exit(main())
