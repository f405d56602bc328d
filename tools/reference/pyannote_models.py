"""pyannote.audio's own network classes, built as community-1 uses them.

Shared by record.py and tools/convert/convert.py. PyanNet gets
segmentation-3.0's hyper-parameters (its class defaults differ: 2 LSTM
layers) and the powerset specifications; WeSpeakerResNet34 its defaults.
"""

import torch
from pyannote.audio.core.task import Problem, Resolution, Specifications
from pyannote.audio.models.embedding import WeSpeakerResNet34
from pyannote.audio.models.segmentation import PyanNet

SEGMENTATION_HPARAMS = dict(
    sincnet={"stride": 10},
    lstm={
        "hidden_size": 128,
        "num_layers": 4,
        "bidirectional": True,
        "monolithic": True,
        "dropout": 0.5,
    },
    linear={"hidden_size": 128, "num_layers": 2},
    sample_rate=16000,
    num_channels=1,
)


def segmentation_specifications() -> Specifications:
    return Specifications(
        problem=Problem.MONO_LABEL_CLASSIFICATION,
        resolution=Resolution.FRAME,
        duration=10.0,
        min_duration=None,
        warm_up=(0.0, 0.0),
        classes=["speaker#1", "speaker#2", "speaker#3"],
        powerset_max_classes=2,
        permutation_invariant=True,
    )


def build_pyannet() -> PyanNet:
    model = PyanNet(**SEGMENTATION_HPARAMS)
    model.specifications = segmentation_specifications()
    model.build()
    model.eval()
    return model


def build_resnet34() -> WeSpeakerResNet34:
    model = WeSpeakerResNet34()
    model.eval()
    return model


DTYPE_NAMES = {torch.float32: "F32", torch.int64: "I64", torch.float64: "F64"}


def state_dict_listing(model: torch.nn.Module) -> str:
    """One line per state_dict tensor: name, dtype, comma-separated shape
    ('-' for a scalar), in state_dict order."""
    lines = []
    for name, t in model.state_dict().items():
        shape = ",".join(str(d) for d in t.shape) or "-"
        lines.append(f"{name} {DTYPE_NAMES[t.dtype]} {shape}")
    return "\n".join(lines) + "\n"
