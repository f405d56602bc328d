"""cuda_library: compiles .cu files with nvcc from /usr/local/cuda.

Bazel 4.2.3 has no CUDA rules offline, so a genrule runs nvcc per file and a
cc_library wraps the objects. Default targets: sm_80 and sm_90 machine code
plus compute_90 PTX (override with `gencode`).
"""

DEFAULT_GENCODE = [
    "arch=compute_80,code=sm_80",
    "arch=compute_90,code=sm_90",
    "arch=compute_90,code=compute_90",
]

def cuda_library(name, srcs, hdrs = [], deps = [], cu_hdrs = [], gencode = None, nvcc_flags = [], visibility = None, **kwargs):
    """A cc_library whose .cu sources are compiled by nvcc.

    Args:
      name: target name.
      srcs: .cu files (plain .cc files may be mixed in; they go to the C++ compiler).
      hdrs: public headers (must compile with the host compiler).
      deps: cc deps; their headers are visible to nvcc through include paths below.
      cu_hdrs: extra headers the .cu files include (private).
      gencode: list of nvcc -gencode values; DEFAULT_GENCODE if None.
      nvcc_flags: extra nvcc flags.
      visibility: visibility.
      **kwargs: passed to cc_library (tags, ...).
    """
    gencode = gencode or DEFAULT_GENCODE
    objs = []
    cc_srcs = []
    for src in srcs:
        if not src.endswith(".cu"):
            cc_srcs.append(src)
            continue
        obj = name + "_" + src.replace("/", "_")[:-len(".cu")] + ".cu.o"
        objs.append(obj)
        native.genrule(
            name = obj.replace(".", "_") + "_nvcc",
            srcs = [src] + hdrs + cu_hdrs,
            outs = [obj],
            cmd = " ".join([
                "/usr/local/cuda/bin/nvcc",
                "-c",
                "-std=c++20",
                "-O3",
                "-Xcompiler -fPIC",
                "--expt-relaxed-constexpr",
                "-I.",
                "-I$(GENDIR)",
                "-isystem /usr/include/eigen3",
            ] + ["-gencode " + g for g in gencode] + nvcc_flags + [
                "-o $@",
                "$(location {})".format(src),
            ]),
            tags = kwargs.get("tags", []),
        )

    native.cc_library(
        name = name,
        srcs = cc_srcs + objs,
        hdrs = hdrs,
        deps = deps + ["//third_party:cuda_runtime"],
        visibility = visibility,
        linkstatic = True,
        **kwargs
    )
