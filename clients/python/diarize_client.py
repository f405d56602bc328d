#!/usr/bin/env python3
"""Example Python client of the diarization service (API v1).

Runs on Debian's python3-grpcio and python3-protobuf: the _pb2 modules are
generated at run time from proto/diarization/v1/diarization.proto with
protoc and Debian's grpc_python_plugin into a temporary directory, so
nothing generated is committed.

  python3 clients/python/diarize_client.py --server 127.0.0.1:50051 FILE.wav
  python3 clients/python/diarize_client.py --server ... --mode unary FILE.wav
  python3 clients/python/diarize_client.py --server ... --info
  python3 clients/python/diarize_client.py --server HOST:PORT --tls_ca ca.pem \
      [--tls_cert client.pem --tls_key client.key] [--token_file TOKEN] FILE.wav

Streaming reads a WAV file with the standard library (16-bit PCM, any rate
and channel count; the server resamples and down-mixes); --mode unary sends
any file the server decodes (WAV, FLAC, OGG) whole. Prints RTTM (default) or
JSON. Exit codes as diarize_client (docs/api.md): 0 ok, 2 usage,
3 INVALID_ARGUMENT, 4 UNAVAILABLE/RESOURCE_EXHAUSTED, 5 DEADLINE_EXCEEDED,
6 UNAUTHENTICATED/PERMISSION_DENIED, 1 other. Security (TLS, mutual TLS,
a bearer token): docs/operations.md, "Security".
"""
import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import wave

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROTO = os.path.join("diarization", "v1", "diarization.proto")


def load_stubs(proto_root):
    """Generates diarization_pb2 / _pb2_grpc into a temp dir and imports them."""
    out = tempfile.mkdtemp(prefix="diarization_pb2_")
    plugin = "/usr/bin/grpc_python_plugin"
    cmd = ["protoc", "-I" + proto_root, "--python_out=" + out,
           "--grpc_python_out=" + out,
           "--plugin=protoc-gen-grpc_python=" + plugin,
           os.path.join(proto_root, PROTO)]
    subprocess.run(cmd, check=True)
    sys.path.insert(0, out)
    pb2 = importlib.import_module("diarization.v1.diarization_pb2")
    pb2_grpc = importlib.import_module("diarization.v1.diarization_pb2_grpc")
    return pb2, pb2_grpc


def exit_code(code, grpc):
    return {
        grpc.StatusCode.OK: 0,
        grpc.StatusCode.INVALID_ARGUMENT: 3,
        grpc.StatusCode.UNAVAILABLE: 4,
        grpc.StatusCode.RESOURCE_EXHAUSTED: 4,
        grpc.StatusCode.DEADLINE_EXCEEDED: 5,
        grpc.StatusCode.UNAUTHENTICATED: 6,
        grpc.StatusCode.PERMISSION_DENIED: 6,
    }.get(code, 1)


def read_bytes(path, flag):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ValueError("cannot read %s=%s: %s" % (flag, path, e.strerror))


def open_channel(grpc, args):
    """A plaintext or TLS (mutual with --tls_cert/--tls_key) channel."""
    tls = args.tls or args.tls_ca or args.tls_cert or args.tls_key
    if not tls:
        return grpc.insecure_channel(args.server)
    if bool(args.tls_cert) != bool(args.tls_key):
        raise ValueError("--tls_cert and --tls_key go together (mutual TLS)")
    creds = grpc.ssl_channel_credentials(
        root_certificates=read_bytes(args.tls_ca, "--tls_ca") if args.tls_ca else None,
        private_key=read_bytes(args.tls_key, "--tls_key") if args.tls_key else None,
        certificate_chain=read_bytes(args.tls_cert, "--tls_cert") if args.tls_cert else None)
    options = []
    if args.tls_server_name:
        options.append(("grpc.ssl_target_name_override", args.tls_server_name))
    return grpc.secure_channel(args.server, creds, options=options)


def call_metadata(args):
    """The authorization metadata for every call; empty without a token.

    Sent as plain call metadata (not call credentials) so that it also reaches
    a plaintext loopback server."""
    token = args.token
    if args.token_file:
        if token:
            raise ValueError("give --token or --token_file, not both")
        token = read_bytes(args.token_file, "--token_file").decode().split("\n")[0].strip()
        if not token:
            raise ValueError("--token_file=%s is empty" % args.token_file)
    return [("authorization", "Bearer " + token)] if token else []


def make_config(pb2, args, uri):
    config = pb2.DiarizationConfig(request_id=args.request_id, uri=uri)
    config.speakers.num_speakers = args.num_speakers
    config.speakers.min_speakers = args.min_speakers
    config.speakers.max_speakers = args.max_speakers
    config.options.exclusive = args.exclusive
    config.options.partial_results = args.partial
    return config


def stream_requests(pb2, args, path, uri):
    with wave.open(path, "rb") as w:
        if w.getsampwidth() != 2:
            raise ValueError("streaming needs 16-bit PCM WAV; use --mode unary")
        config = make_config(pb2, args, uri)
        config.audio.encoding = pb2.LINEAR16
        config.audio.sample_rate_hz = w.getframerate()
        config.audio.channel_count = w.getnchannels()
        yield pb2.DiarizeRequest(config=config)
        frames = max(1, w.getframerate() * args.chunk_ms // 1000)
        while True:
            data = w.readframes(frames)
            if not data:
                break
            yield pb2.DiarizeRequest(audio=data)


def to_dict(result):
    return {
        "request_id": result.request_id,
        "speaker_count": result.speaker_count,
        "audio_s": result.audio_s,
        "processing_s": result.processing_s,
        "rtfx": result.rtfx,
        "device": result.device,
        "segments": [{"start_s": s.start_s, "end_s": s.end_s,
                      "speaker": s.speaker} for s in result.segments],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", nargs="?")
    parser.add_argument("--server", default="127.0.0.1:50051")
    parser.add_argument("--mode", choices=["stream", "unary"], default="stream")
    parser.add_argument("--output", choices=["rttm", "json"], default="rttm")
    parser.add_argument("--info", action="store_true", help="print GetInfo")
    parser.add_argument("--num_speakers", type=int, default=0)
    parser.add_argument("--min_speakers", type=int, default=0)
    parser.add_argument("--max_speakers", type=int, default=0)
    parser.add_argument("--exclusive", action="store_true")
    parser.add_argument("--partial", action="store_true",
                        help="ask for partial results (printed to stderr)")
    parser.add_argument("--request_id", default="")
    parser.add_argument("--chunk_ms", type=int, default=100)
    parser.add_argument("--deadline_s", type=float, default=None)
    parser.add_argument("--proto_root", default=os.path.join(REPO, "proto"))
    parser.add_argument("--tls", action="store_true",
                        help="TLS with the system's CA roots")
    parser.add_argument("--tls_ca", default="", help="PEM CA of the server")
    parser.add_argument("--tls_cert", default="",
                        help="PEM client certificate (mutual TLS)")
    parser.add_argument("--tls_key", default="", help="its PEM private key")
    parser.add_argument("--tls_server_name", default="",
                        help="name to verify the server certificate against")
    parser.add_argument("--token", default="",
                        help="bearer token (visible in ps: prefer --token_file)")
    parser.add_argument("--token_file", default="",
                        help="file whose first line is the bearer token")
    args = parser.parse_args()
    if not args.info and not args.file:
        parser.print_usage(sys.stderr)
        return 2

    import grpc  # Debian: python3-grpcio
    pb2, pb2_grpc = load_stubs(args.proto_root)
    try:
        channel = open_channel(grpc, args)
        metadata = call_metadata(args)
    except ValueError as e:
        print("diarize_client.py: %s" % e, file=sys.stderr)
        return 2
    with channel:
        stub = pb2_grpc.DiarizationStub(channel)
        try:
            if args.info:
                info = stub.GetInfo(pb2.GetInfoRequest(), timeout=args.deadline_s,
                                    metadata=metadata)
                print(json.dumps({
                    "version": info.version, "state": info.state,
                    "models": [{"role": m.role, "name": m.name,
                                "random_weights": m.random_weights}
                               for m in info.models],
                    "devices": [d.name for d in info.devices]}, indent=1))
                return 0
            uri = os.path.splitext(os.path.basename(args.file))[0] or "audio"
            uri = "".join(c if "!" <= c <= "~" else "_" for c in uri)[:128]
            if args.mode == "unary":
                with open(args.file, "rb") as f:
                    audio = f.read()
                config = make_config(pb2, args, uri)
                config.audio.encoding = pb2.ENCODED
                result = stub.DiarizeFile(
                    pb2.DiarizeFileRequest(config=config, audio=audio),
                    timeout=args.deadline_s, metadata=metadata)
            else:
                result = None
                for response in stub.Diarize(
                        stream_requests(pb2, args, args.file, uri),
                        timeout=args.deadline_s, metadata=metadata):
                    if response.HasField("partial"):
                        p = response.partial
                        print("partial (provisional=%s): received %.1f s, "
                              "processed %.1f s, %d segments" %
                              (p.provisional, p.audio_received_s,
                               p.audio_processed_s, len(p.segments)),
                              file=sys.stderr)
                    elif response.HasField("final"):
                        result = response.final
                if result is None:
                    print("diarize_client.py: no final result", file=sys.stderr)
                    return 1
        except grpc.RpcError as e:
            print("diarize_client.py: %s: %s" % (e.code().name, e.details()),
                  file=sys.stderr)
            return exit_code(e.code(), grpc)
        except (OSError, ValueError, wave.Error) as e:
            print("diarize_client.py: %s" % e, file=sys.stderr)
            return 2
    if args.output == "json":
        print(json.dumps(to_dict(result), indent=1))
    else:
        sys.stdout.write(result.rttm)
    return 0


if __name__ == "__main__":
    sys.exit(main())
