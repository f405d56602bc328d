"""Generates the gRPC stubs while the wheel is built (pyproject.toml).

grpcio-tools (pinned in pyproject.toml's build-system) compiles
proto/diarization/v1/diarization.proto into diarization_client/_proto/. The
proto is looked for in $DIARIZATION_PROTO_ROOT, then in ./proto (an sdist),
then in ../../proto (the repository's clients/python beside proto/).
"""
import os
import pathlib
import shutil
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = pathlib.Path(__file__).resolve().parent
PROTO = pathlib.Path("diarization", "v1", "diarization.proto")


def proto_root() -> pathlib.Path:
    candidates = [os.environ.get("DIARIZATION_PROTO_ROOT", ""),
                  HERE / "proto", HERE.parent.parent / "proto"]
    for root in candidates:
        if root and (pathlib.Path(root) / PROTO).is_file():
            return pathlib.Path(root)
    raise SystemExit(
        f"diarization-client: cannot find {PROTO} (looked in "
        f"$DIARIZATION_PROTO_ROOT, ./proto and ../../proto); build from a "
        f"checkout of the repository or set DIARIZATION_PROTO_ROOT")


def generate_stubs(out_dir: pathlib.Path) -> None:
    # Imported here: grpcio-tools is a build requirement only.
    import grpc_tools
    from grpc_tools import protoc

    root = proto_root()
    well_known = pathlib.Path(grpc_tools.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory() as tmp:
        rc = protoc.main([
            "grpc_tools.protoc", f"-I{root}", f"-I{well_known}",
            f"--python_out={tmp}", f"--pyi_out={tmp}",
            f"--grpc_python_out={tmp}", str(root / PROTO)])
        if rc != 0:
            raise SystemExit(f"diarization-client: protoc failed ({rc})")
        generated = pathlib.Path(tmp, PROTO.parent)
        out_dir.mkdir(parents=True, exist_ok=True)
        for name in ("diarization_pb2.py", "diarization_pb2.pyi"):
            shutil.copy(generated / name, out_dir / name)
        # protoc writes an absolute import of the proto package
        # ("from diarization.v1 import ..."); inside this package it must be
        # relative, so the stubs live under diarization_client only.
        grpc_stub = (generated / "diarization_pb2_grpc.py").read_text()
        absolute = "from diarization.v1 import diarization_pb2 as"
        if absolute not in grpc_stub:
            raise SystemExit("diarization-client: unexpected grpc stub imports")
        (out_dir / "diarization_pb2_grpc.py").write_text(
            grpc_stub.replace(absolute, "from . import diarization_pb2 as"))
        (out_dir / "__init__.py").write_text(
            '"""Generated at build time from diarization.proto."""\n')


class BuildPyWithStubs(build_py):
    def run(self):
        super().run()
        generate_stubs(pathlib.Path(self.build_lib, "diarization_client", "_proto"))


setup(cmdclass={"build_py": BuildPyWithStubs})
