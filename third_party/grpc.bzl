"""C++ code generation for .proto files with Debian's protoc and grpc_cpp_plugin.

Bazel 4.2.3 offline has no rules_proto/grpc rules, so a genrule runs the system
compilers. Proto import paths are relative to the package that calls the macro.
"""

def cc_grpc_library(name, srcs, deps = [], grpc = True, visibility = None):
    """Generates and compiles C++ (and gRPC stubs) for `srcs`.

    Args:
      name: the cc_library's name.
      srcs: .proto files, relative to the calling package (also the import root).
      deps: cc deps (other cc_grpc_library targets for imported protos).
      grpc: also generate gRPC service stubs.
      visibility: visibility of the cc_library.
    """
    hdrs = []
    cc_srcs = []
    for src in srcs:
        stem = src[:-len(".proto")]
        hdrs.append(stem + ".pb.h")
        cc_srcs.append(stem + ".pb.cc")
        if grpc:
            hdrs.append(stem + ".grpc.pb.h")
            cc_srcs.append(stem + ".grpc.pb.cc")

    pkg = native.package_name()
    cmd = "/usr/bin/protoc -I$$(dirname $(location {first}) | sed 's#/{rel}$$##') ".format(
        first = srcs[0],
        rel = srcs[0].rpartition("/")[0],
    ) if "/" in srcs[0] else "/usr/bin/protoc -I$$(dirname $(location {first})) ".format(first = srcs[0])
    cmd += "-I/usr/include -I/usr/share/grpc-proto "
    cmd += "--cpp_out=$(GENDIR)/{pkg} ".format(pkg = pkg)
    if grpc:
        cmd += "--grpc_out=$(GENDIR)/{pkg} --plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin ".format(pkg = pkg)
    cmd += " ".join(["$(location {})".format(s) for s in srcs])

    native.genrule(
        name = name + "_gen",
        srcs = srcs,
        outs = hdrs + cc_srcs,
        cmd = cmd,
    )

    native.cc_library(
        name = name,
        srcs = cc_srcs,
        hdrs = hdrs,
        includes = ["."],
        copts = ["-Wno-unused-parameter"],
        deps = deps + ["//third_party:grpc", "//third_party:protobuf"],
        visibility = visibility,
    )
