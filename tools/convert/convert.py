#!/usr/bin/env python3
"""Turns pyannote checkpoints into the service's model directory.

    <out>/manifest.json, segmentation.safetensors, embedding.safetensors,
    plda/xvec_transform.npz, plda/plda.npz        (engine/models/format/model_dir.h)

Sources:
  --community-1 DIR   a download of pyannote/speaker-diarization-community-1
                      (segmentation/pytorch_model.bin, embedding/pytorch_model.bin,
                      plda/xvec_transform.npz, plda/plda.npz)
or each model on its own:
  --segmentation SRC  pyannote/segmentation-3.0 `pytorch_model.bin` (Lightning
                      checkpoint), its ONNX export (`*.onnx`), a `.safetensors`
                      state_dict, or an existing model directory
  --embedding SRC     pyannote/wespeaker-voxceleb-resnet34-LM `pytorch_model.bin`,
                      a WeSpeaker checkpoint (`avg_model.pt`, keys without the
                      `resnet.` prefix), a WeSpeaker ResNet34 ONNX export
                      (BatchNorm folded: stored as identity BatchNorms, equal to
                      the ONNX model), a `.safetensors`, or a model directory
  --plda DIR          folder with xvec_transform.npz and plda.npz

A checkpoint file is taken for the trained pyannote model it is laid out as.
If its weights are not trained (fresh random weights in pyannote's classes,
say), pass --random-weights [ROLE ...] (segmentation, embedding; none = both):
the manifest then records random_weights: true with a "random ..." name, the
service's GetInfo reports random_weights and it logs a warning at start, as
for tools/make_random_models directories.

Checkpoints are read WITHOUT torch (a restricted unpickler over the zip
archive, numpy only), so this runs with any Python 3.10+ that has numpy; the
ONNX path needs the `onnx` package (tools/reference/setup.sh installs both).
Every tensor is copied bit for bit; names, dtypes and shapes are checked
against pyannote's modules (engine/models/testdata/*_state_dict.txt).
"""

import argparse
import collections
import hashlib
import io
import json
import pickle
import shutil
import struct
import sys
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SPEC_DIR = ROOT / "engine" / "models" / "testdata"
FORMAT = "diarization-models"
FORMAT_VERSION = 1
DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32,
          "F16": np.float16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}
NP_TO_ST = {np.dtype(v): k for k, v in DTYPES.items()}


class ConversionError(Exception):
    pass


# --------------------------------------------------------------------------
# Expected tensors (the same listings the C++ model_specs_test checks).

def load_specs(file_name: str):
    specs = []
    for line in (SPEC_DIR / file_name).read_text().splitlines():
        name, dtype, shape = line.split()
        dims = () if shape == "-" else tuple(int(d) for d in shape.split(","))
        specs.append((name, dtype, dims))
    return specs


SEGMENTATION_SPECS = load_specs("pyannet_state_dict.txt")
EMBEDDING_SPECS = load_specs("resnet34_state_dict.txt")

# segmentation-3.0's hyper-parameters (models.md §1); a checkpoint with other
# values is another model and must not be loaded into this architecture.
SEGMENTATION_HPARAMS = {
    ("sincnet", "stride"): 10,
    ("lstm", "hidden_size"): 128,
    ("lstm", "num_layers"): 4,
    ("lstm", "bidirectional"): True,
    ("lstm", "monolithic"): True,
    ("linear", "hidden_size"): 128,
    ("linear", "num_layers"): 2,
}


# --------------------------------------------------------------------------
# Torch-free reader of torch.save() zip checkpoints.

_STORAGE_DTYPES = {
    "FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
    "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16,
    "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_,
    "BFloat16Storage": "bfloat16",
}


_SAFE_BUILTINS = {"set": set, "frozenset": frozenset, "tuple": tuple, "list": list,
                  "dict": dict, "slice": slice, "int": int, "float": float, "bool": bool,
                  "str": str, "complex": complex}


class _StorageType:
    def __init__(self, name):
        self.name = name


class _Opaque:
    """Stands in for any non-tensor object in the pickle (pyannote's
    Specifications, enums, ...): keeps its arguments and state for display."""

    def __new__(cls, *args, **kwargs):
        # Pickle's NEWOBJ calls __new__ only, so keep the arguments here.
        obj = super().__new__(cls)
        obj.args, obj.kwargs, obj.state = args, kwargs, None
        return obj

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        self.state = state

    def __call__(self, *args, **kwargs):
        return _Opaque(*args, **kwargs)


def _plain(value):
    """A readable form of a pickled value (e.g. torch's TorchVersion string)."""
    if isinstance(value, _Opaque) and len(value.args) == 1:
        return str(value.args[0])
    return str(value)


def _opaque_class(module, name):
    return type(name, (_Opaque,), {"__module__": module})


def _rebuild_tensor(storage, offset, size, stride, *unused):
    array = storage
    if len(size) == 0:
        return array[offset:offset + 1].reshape(()).copy()
    itemsize = array.dtype.itemsize
    view = np.lib.stride_tricks.as_strided(
        array[offset:], shape=tuple(size), strides=tuple(s * itemsize for s in stride))
    return np.ascontiguousarray(view)


def _rebuild_parameter(data, requires_grad, backward_hooks, *unused):
    return data


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, archive: zipfile.ZipFile, prefix: str):
        super().__init__(file)
        self.archive, self.prefix = archive, prefix
        self.storages = {}

    def find_class(self, module, name):
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        if module == "torch._utils" and name in ("_rebuild_tensor_v2", "_rebuild_tensor"):
            return _rebuild_tensor
        if module == "torch._utils" and name == "_rebuild_parameter":
            return _rebuild_parameter
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(name)
        if module in ("builtins", "__builtin__") and name in _SAFE_BUILTINS:
            return _SAFE_BUILTINS[name]
        # Everything else (torch.device, torch.Size, pyannote classes, enums)
        # is data we do not need: keep it opaque, never import it.
        return _opaque_class(module, name)

    def persistent_load(self, pid):
        kind, storage_type, key, _location, numel = pid[:5]
        if kind != "storage":
            raise ConversionError(f"unsupported persistent id {pid!r}")
        if key not in self.storages:
            dtype = _STORAGE_DTYPES.get(getattr(storage_type, "name", ""))
            if dtype is None:
                raise ConversionError(f"unsupported storage type {storage_type!r}")
            raw = self.archive.read(f"{self.prefix}/data/{key}")
            if dtype == "bfloat16":
                raise ConversionError("bfloat16 checkpoints are not supported")
            array = np.frombuffer(raw, dtype)
            if array.size != numel:
                raise ConversionError(f"storage {key}: {array.size} elements, expected {numel}")
            self.storages[key] = array
        return self.storages[key]


def load_checkpoint(path: Path):
    """torch.load(path) for zip-format checkpoints, without torch: tensors
    become numpy arrays (bit-identical data), other objects opaque stubs."""
    if not zipfile.is_zipfile(path):
        raise ConversionError(
            f"{path} is not a zip-format torch checkpoint (saved with torch < 1.6 or "
            "_use_new_zipfile_serialization=False); re-save it with a current torch")
    with zipfile.ZipFile(path) as archive:
        pkl = [n for n in archive.namelist() if n.endswith("/data.pkl")]
        if len(pkl) != 1:
            raise ConversionError(f"{path}: expected one */data.pkl, found {pkl}")
        prefix = pkl[0][: -len("/data.pkl")]
        byteorder = f"{prefix}/byteorder"
        if byteorder in archive.namelist() and archive.read(byteorder) != b"little":
            raise ConversionError(f"{path}: big-endian checkpoint")
        with archive.open(pkl[0]) as f:
            return _Unpickler(io.BytesIO(f.read()), archive, prefix).load()


# --------------------------------------------------------------------------
# Sources -> {name: np.ndarray}

def check_tensors(role, tensors, specs, extra_ok=()):
    names = {n for n, _, _ in specs}
    missing = [n for n in names if n not in tensors]
    problems = []
    if missing:
        problems.append(f"{len(missing)} missing: {', '.join(sorted(missing))}")
    for name, dtype, shape in specs:
        if name in tensors:
            t = tensors[name]
            got = NP_TO_ST.get(t.dtype, str(t.dtype))
            if got != dtype or tuple(t.shape) != shape:
                problems.append(f"{name} is {got}{list(t.shape)}, expected {dtype}{list(shape)}")
    if problems:
        raise ConversionError(f"{role}: tensors do not match pyannote's module: " +
                              "; ".join(problems))
    return collections.OrderedDict((n, np.asarray(tensors[n], order="C")) for n, _, _ in specs)


def _hparam(hparams, path):
    value = hparams
    for key in path:
        if isinstance(value, _Opaque):
            value = value.state
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def from_checkpoint(path: Path, role: str):
    ckpt = load_checkpoint(path)
    if not isinstance(ckpt, dict):
        raise ConversionError(f"{path}: not a checkpoint dictionary")
    notes = []
    if "state_dict" in ckpt:
        state = ckpt["state_dict"]
        arch = (ckpt.get("pyannote.audio") or {}).get("architecture", {})
        cls = arch.get("class") if isinstance(arch, dict) else None
        expected = "PyanNet" if role == "segmentation" else "WeSpeakerResNet34"
        if cls is not None and cls != expected:
            raise ConversionError(f"{path}: a pyannote {cls} checkpoint, expected {expected}")
        if role == "segmentation":
            hp = ckpt.get("hyper_parameters") or {}
            for key, want in SEGMENTATION_HPARAMS.items():
                got = _hparam(hp, key)
                if got is not None and got != want:
                    raise ConversionError(
                        f"{path}: hyper-parameter {'.'.join(key)} is {got!r}, "
                        f"segmentation-3.0 has {want!r}")
        versions = (ckpt.get("pyannote.audio") or {}).get("versions") or {}
        if isinstance(versions, dict) and versions:
            notes.append("saved by " + ", ".join(
                f"{k} {_plain(v)}" for k, v in sorted(versions.items())))
    else:
        state = ckpt  # a bare state_dict (e.g. WeSpeaker's avg_model.pt)
    state = {k: v for k, v in state.items() if isinstance(v, np.ndarray)}
    if role == "embedding" and not any(k.startswith("resnet.") for k in state):
        # WeSpeaker's own checkpoints: ResNet keys without pyannote's prefix;
        # the training-only projection head (projection.*) is dropped.
        state = {"resnet." + k: v for k, v in state.items()
                 if not k.startswith("projection.")}
    specs = SEGMENTATION_SPECS if role == "segmentation" else EMBEDDING_SPECS
    names = {n for n, _, _ in specs}
    ignored = sorted(k for k in state if k not in names)
    if ignored:
        notes.append(f"ignored {len(ignored)} extra keys ({', '.join(ignored[:4])}"
                     f"{', ...' if len(ignored) > 4 else ''})")
    return check_tensors(role, state, specs), notes


def read_safetensors(path: Path):
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        out[name] = np.frombuffer(data[base + begin:base + end],
                                  DTYPES[entry["dtype"]]).reshape(entry["shape"]).copy()
    return out


# ONNX LSTM gates are [i, o, f, c]; PyTorch's are [i, f, g(=c), o].
_ONNX_TO_TORCH_GATES = [0, 2, 3, 1]


def _onnx_gates_to_torch(a, hidden):
    """Reorders the 4 gate blocks along axis 0 from ONNX's to PyTorch's."""
    blocks = [a[k * hidden:(k + 1) * hidden] for k in range(4)]
    return np.ascontiguousarray(np.concatenate([blocks[k] for k in _ONNX_TO_TORCH_GATES]))


def from_onnx_segmentation(path: Path):
    graph, init = _load_onnx(path)
    names = {n for n, _, _ in SEGMENTATION_SPECS}
    tensors = {k: v for k, v in init.items() if k in names}
    notes = []

    # LSTM layers: one ONNX LSTM node per layer (W, R, B inputs), in order.
    lstm_nodes = [n for n in graph.node if n.op_type == "LSTM"]
    if lstm_nodes:
        if len(lstm_nodes) != 4:
            raise ConversionError(f"{path}: {len(lstm_nodes)} LSTM nodes, expected 4 layers")
        for layer, node in enumerate(lstm_nodes):
            hidden = next(a.i for a in node.attribute if a.name == "hidden_size")
            W, R = init[node.input[1]], init[node.input[2]]
            B = init[node.input[3]] if len(node.input) > 3 and node.input[3] else None
            if W.shape[0] != 2:
                raise ConversionError(f"{path}: LSTM layer {layer} is not bidirectional")
            for d, suffix in enumerate(["", "_reverse"]):
                tensors[f"lstm.weight_ih_l{layer}{suffix}"] = _onnx_gates_to_torch(W[d], hidden)
                tensors[f"lstm.weight_hh_l{layer}{suffix}"] = _onnx_gates_to_torch(R[d], hidden)
                b = B[d] if B is not None else np.zeros(8 * hidden, np.float32)
                tensors[f"lstm.bias_ih_l{layer}{suffix}"] = _onnx_gates_to_torch(
                    b[:4 * hidden], hidden)
                tensors[f"lstm.bias_hh_l{layer}{suffix}"] = _onnx_gates_to_torch(
                    b[4 * hidden:], hidden)

    # Linear layers: MatMul(x, W^T) followed by Add(bias) with a named bias,
    # or Gemm(x, W, bias, transB=1).
    consumers = collections.defaultdict(list)
    for node in graph.node:
        for i in node.input:
            consumers[i].append(node)
    for node in graph.node:
        if node.op_type == "MatMul" and node.input[1] in init:
            for add in consumers[node.output[0]]:
                if add.op_type != "Add":
                    continue
                bias = next((i for i in add.input if i.endswith(".bias") and i in init), None)
                if bias is not None:
                    tensors[bias[:-5] + ".weight"] = np.ascontiguousarray(init[node.input[1]].T)
        if node.op_type == "Gemm" and node.input[1] in init and len(node.input) > 2:
            trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
            bias = node.input[2]
            if bias.endswith(".bias"):
                w = init[node.input[1]]
                tensors[bias[:-5] + ".weight"] = np.ascontiguousarray(w if trans_b else w.T)

    # Buffers the exporter may have folded away are fixed functions
    # (models.md §1.1): recompute them exactly as asteroid does.
    if "sincnet.conv1d.0.filterbank.window_" not in tensors:
        n = np.arange(1 - 251, 251, 2)
        tensors["sincnet.conv1d.0.filterbank.window_"] = (
            0.54 + 0.46 * np.cos(np.pi * n / 250))[:125].astype(np.float32)
        notes.append("window_ recomputed (not in the ONNX file)")
    if "sincnet.conv1d.0.filterbank.n_" not in tensors:
        t = (np.arange(-125, 0, dtype=np.float32) / np.float32(16000)).astype(np.float32)
        tensors["sincnet.conv1d.0.filterbank.n_"] = (np.float32(2 * np.pi) * t).reshape(1, 125)
        notes.append("n_ recomputed (not in the ONNX file)")
    for key in ("low_hz_", "band_hz_"):
        if f"sincnet.conv1d.0.filterbank.{key}" not in tensors:
            raise ConversionError(
                f"{path}: the SincNet parameters were folded into a constant filter bank "
                f"(no initializer sincnet.conv1d.0.filterbank.{key}); this export cannot be "
                "converted exactly. Convert the pytorch_model.bin instead.")
    used = set(tensors)
    unknown = sorted(k for k in init if k not in used and not k.startswith(("onnx::", "/")))
    if unknown:
        notes.append(f"unused initializers: {', '.join(unknown[:6])}")
    return check_tensors("segmentation", tensors, SEGMENTATION_SPECS), notes


def _load_onnx(path: Path):
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError as e:
        raise ConversionError("the ONNX path needs the `onnx` package "
                              "(bash tools/reference/setup.sh)") from e
    graph = onnx.load(str(path)).graph
    init = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:  # Constant nodes hold tensors too in some exports.
        if node.op_type == "Constant" and node.attribute and node.attribute[0].HasField("t"):
            init.setdefault(node.output[0], numpy_helper.to_array(node.attribute[0].t))
    return graph, init


# float32(1 - 1e-5): sqrt(running_var + 1e-5) is then exactly 1.0f, so an
# identity BatchNorm adds its bias and nothing else.
_IDENTITY_BN_VAR = np.float32(1.0) - np.float32(1e-5)


def from_onnx_embedding(path: Path):
    """WeSpeaker ResNet34 ONNX export (input fbank features). Exports made in
    eval mode fold every BatchNorm into the preceding Conv (weight and bias);
    the folded conv is stored with an identity BatchNorm carrying the bias,
    which computes what the ONNX model computes. Unfolded exports
    (BatchNormalization nodes) are copied exactly."""
    graph, init = _load_onnx(path)
    consumers = {}
    for node in graph.node:
        for i in node.input:
            consumers.setdefault(i, []).append(node)
    convs = [n for n in graph.node if n.op_type == "Conv"]
    conv_names = [n for n, _, shape in EMBEDDING_SPECS if len(shape) == 4]
    if len(convs) != len(conv_names):
        raise ConversionError(f"{path}: {len(convs)} Conv nodes, ResNet34 has {len(conv_names)}")
    tensors, folded = {}, 0
    for node, name in zip(convs, conv_names):
        tensors[name] = init[node.input[1]]
        if name == "resnet.conv1.weight":
            bn = "resnet.bn1"
        elif name.endswith("shortcut.0.weight"):
            bn = name[: -len("0.weight")] + "1"
        else:
            bn = name[: -len(".convN.weight")] + ".bn" + name[-len("N.weight")]
        c = tensors[name].shape[0]
        nexts = consumers.get(node.output[0], [])
        if nexts and nexts[0].op_type == "BatchNormalization":
            bnode = nexts[0]
            for key, idx in (("weight", 1), ("bias", 2), ("running_mean", 3), ("running_var", 4)):
                tensors[f"{bn}.{key}"] = init[bnode.input[idx]]
        else:
            folded += 1
            bias = (init[node.input[2]] if len(node.input) > 2 and node.input[2]
                    else np.zeros(c, np.float32))
            tensors[f"{bn}.weight"] = np.ones(c, np.float32)
            tensors[f"{bn}.bias"] = bias.astype(np.float32)
            tensors[f"{bn}.running_mean"] = np.zeros(c, np.float32)
            tensors[f"{bn}.running_var"] = np.full(c, _IDENTITY_BN_VAR, np.float32)
        tensors[f"{bn}.num_batches_tracked"] = np.zeros((), np.int64)
    for node in graph.node:
        if node.op_type == "Gemm" and node.input[1] in init:
            w = init[node.input[1]]
            trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
            w = w if trans_b else w.T
            if w.shape == (256, 5120):
                tensors["resnet.seg_1.weight"] = np.ascontiguousarray(w)
                tensors["resnet.seg_1.bias"] = init[node.input[2]]
        if node.op_type == "MatMul" and node.input[1] in init and \
                init[node.input[1]].shape == (5120, 256):
            tensors["resnet.seg_1.weight"] = np.ascontiguousarray(init[node.input[1]].T)
            add = consumers.get(node.output[0], [])
            if add and add[0].op_type == "Add":
                b = next(i for i in add[0].input if i in init)
                tensors["resnet.seg_1.bias"] = init[b]
    notes = []
    if folded:
        notes.append(f"{folded} BatchNorms folded into convolutions by the ONNX export, stored "
                     "as identity BatchNorms carrying the folded bias (equals the ONNX "
                     "model, not bit-identical to the original checkpoint)")
    return check_tensors("embedding", tensors, EMBEDDING_SPECS), notes


def read_model_source(src: Path, role: str):
    """(tensors, info) for one network from any supported source."""
    if src.is_dir():
        manifest = json.loads((src / "manifest.json").read_text())
        entry = manifest[role]
        tensors = read_safetensors(src / f"{role}.safetensors")
        specs = SEGMENTATION_SPECS if role == "segmentation" else EMBEDDING_SPECS
        return check_tensors(role, tensors, specs), {
            "name": entry["name"], "random_weights": entry["random_weights"],
            "source": entry["source"]}
    if not src.is_file():
        raise ConversionError(f"{role} source {src} does not exist")
    sha = hashlib.sha256(src.read_bytes()).hexdigest()
    if src.suffix == ".onnx":
        if role == "segmentation":
            tensors, notes = from_onnx_segmentation(src)
        else:
            tensors, notes = from_onnx_embedding(src)
    elif src.suffix == ".safetensors":
        specs = SEGMENTATION_SPECS if role == "segmentation" else EMBEDDING_SPECS
        tensors, notes = check_tensors(role, read_safetensors(src), specs), []
    else:
        tensors, notes = from_checkpoint(src, role)
    source = f"converted by tools/convert/convert.py from {src.name} (sha256 {sha})"
    if notes:
        source += "; " + "; ".join(notes)
    default_name = ("pyannote/segmentation-3.0" if role == "segmentation"
                    else "pyannote/wespeaker-voxceleb-resnet34-LM")
    return tensors, {"name": default_name, "random_weights": False, "source": source}


RANDOM_NAMES = {
    "segmentation": "random PyanNet (segmentation-3.0 architecture)",
    "embedding": "random WeSpeakerResNet34 (wespeaker-voxceleb-resnet34-LM architecture)",
}


def mark_random(info, role: str) -> None:
    """--random-weights: the names make_random_models gives random networks."""
    info["random_weights"] = True
    info["name"] = RANDOM_NAMES[role]
    info["source"] += "; random weights (--random-weights), NOT a trained model"


# --------------------------------------------------------------------------
# Writing

def write_safetensors(path: Path, tensors, metadata):
    header = {"__metadata__": metadata} if metadata else {}
    offset = 0
    for name, t in tensors.items():
        header[name] = {"dtype": NP_TO_ST[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + t.nbytes]}
        offset += t.nbytes
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for t in tensors.values():
            f.write(np.asarray(t, order="C").astype(t.dtype.newbyteorder("<"), copy=False).tobytes())
    tmp.replace(path)


def file_entry(root: Path, rel: str):
    data = (root / rel).read_bytes()
    return {"path": rel, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


def write_model_dir(out: Path, seg, seg_info, emb, emb_info, plda_dir: Path, plda_source: str,
                    precision: str = "fp32"):
    out.mkdir(parents=True, exist_ok=True)
    (out / "plda").mkdir(exist_ok=True)
    manifest_path = out / "manifest.json"
    if manifest_path.exists():
        manifest_path.unlink()  # no manifest while the directory is incomplete
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION}
    for role, tensors, info, arch in [("segmentation", seg, seg_info, "PyanNet"),
                                      ("embedding", emb, emb_info, "WeSpeakerResNet34")]:
        rel = f"{role}.safetensors"
        write_safetensors(out / rel, tensors, {"format": "pt", "architecture": arch,
                                               "name": info["name"]})
        manifest[role] = {
            "name": info["name"], "architecture": arch, "precision": precision,
            "random_weights": bool(info["random_weights"]), "source": info["source"],
            "files": [file_entry(out, rel)],
            "tensors": [{"name": n, "dtype": NP_TO_ST[t.dtype], "shape": list(t.shape),
                         "sha256": hashlib.sha256(np.asarray(t, order="C").tobytes()).hexdigest()}
                        for n, t in tensors.items()],
        }
    for name in ("xvec_transform.npz", "plda.npz"):
        src = plda_dir / name
        if not src.is_file():
            raise ConversionError(f"PLDA file {src} does not exist")
        shutil.copyfile(src, out / "plda" / name)
    manifest["plda"] = {
        "name": "pyannote/speaker-diarization-community-1 plda", "architecture": "VBx-PLDA",
        "random_weights": False, "source": plda_source,
        "files": [file_entry(out, "plda/xvec_transform.npz"), file_entry(out, "plda/plda.npz")],
    }
    tmp = out / "manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    tmp.replace(manifest_path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, type=Path, help="model directory to write")
    parser.add_argument("--community-1", dest="community", type=Path,
                        help="pyannote/speaker-diarization-community-1 download")
    parser.add_argument("--segmentation", type=Path)
    parser.add_argument("--embedding", type=Path)
    parser.add_argument("--plda", type=Path, help="folder with xvec_transform.npz, plda.npz")
    parser.add_argument("--random-weights", dest="random_weights", nargs="*", default=None,
                        choices=["segmentation", "embedding"], metavar="ROLE",
                        help="mark these networks (segmentation, embedding; none given: both) "
                             "as random weights, not a trained model")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "tf32"],
                        help="default embedding/segmentation precision in the manifest")
    args = parser.parse_args(argv)

    plda_source = ("pyannote/speaker-diarization-community-1 plda/xvec_transform.npz and "
                   "plda/plda.npz, copied unchanged (CC-BY-4.0; PLDA by BUT Speech@FIT, VBx "
                   "integration in pyannote.audio by Jiangyu Han and Petr Palka)")
    try:
        if args.community:
            c = args.community
            seg_src = args.segmentation or c / "segmentation" / "pytorch_model.bin"
            emb_src = args.embedding or c / "embedding" / "pytorch_model.bin"
            plda = args.plda or c / "plda"
        else:
            if not (args.segmentation and args.embedding and args.plda):
                parser.error("give --community-1 DIR, or all of --segmentation, "
                             "--embedding and --plda")
            seg_src, emb_src, plda = args.segmentation, args.embedding, args.plda
        seg, seg_info = read_model_source(seg_src, "segmentation")
        emb, emb_info = read_model_source(emb_src, "embedding")
        if args.community and not args.segmentation:
            seg_info["name"] = "pyannote/speaker-diarization-community-1 segmentation"
        if args.community and not args.embedding:
            emb_info["name"] = "pyannote/speaker-diarization-community-1 embedding"
        if args.random_weights is not None:
            roles = args.random_weights or ["segmentation", "embedding"]
            for role, info in (("segmentation", seg_info), ("embedding", emb_info)):
                if role in roles:
                    mark_random(info, role)
        write_model_dir(args.out, seg, seg_info, emb, emb_info, plda, plda_source,
                        args.precision)
    except ConversionError as e:
        print(f"convert.py: {e}", file=sys.stderr)
        return 1
    print(f"wrote {args.out}: segmentation from {seg_src}, embedding from {emb_src}, "
          f"PLDA from {plda}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
