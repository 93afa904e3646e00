"""Scaling of uint8 images to float32 and the augmentation record the engine applies.

``normalize`` (a dataset parameter) is one of

* ``"fixed"``: x = (pixel/255 − mean_c) / std_c with the given per-channel ``mean`` and ``std``
  (the papers' reference code, e.g. FedDyn: MNIST (0.1307, 0.3081); CIFAR-10 mean
  (0.491, 0.482, 0.447), std (0.247, 0.243, 0.262));
* ``"train"``: the same with mean_c and std_c computed on the training split (FedDyn standardises
  EMNIST-L this way; with one channel these are the scalar mean and std of all train pixels);
* ``"none"``: x = pixel/255 in [0, 1].

Augmentation is not applied here: a prepared dataset stores each image once. ``augment: true``
records :data:`CIFAR_AUGMENTATION` in meta.json under ``augmentation`` and the engine applies it to
training minibatches (:mod:`fedbench.engine.clients.augment`) as the FedDyn reference code does
(``utils_dataset.py`` of github.com/alpemreacar/FedDyn, the code of Acar et al., "Federated Learning
Based on Dynamic Regularization", ICLR 2021, whose datasets and environment Kim et al.,
"Communication-Efficient and Drift-Robust Federated Learning via Elastic Net", arXiv 2022, App. A.1,
reuse): a horizontal
flip with probability 0.5, then, with probability 0.5, a random 32x32 crop after zero-padding 4
pixels on each side. (torchvision's ``RandomCrop(32, padding=4)`` crops always: set
``random_crop.p`` to 1 for that.) As in FedDyn's code, augmentation acts on the normalised tensor,
so the padding value 0 is the channel mean, not black (torchvision pads before
ToTensor/Normalize, i.e. black). A cell can switch it off or on (``augment`` in an experiment,
config/README.md).
"""

from __future__ import annotations

import copy

import numpy as np

NORMALIZE_MODES = ("fixed", "train", "none")
CIFAR_AUGMENTATION = {
    "horizontal_flip": {"p": 0.5},
    "random_crop": {"size": 32, "padding": 4, "fill": 0.0, "p": 0.5},
    "splits": ["train"],
}
CHUNK = 8192  # images scaled per step, to bound the float64 temporaries


def check_normalize(source: str, normalize, mean, std, channels: int) -> None:
    """Validate the normalisation parameters of an image source.

    Raises:
        ValueError: unknown mode, or ``mean``/``std`` not lists of ``channels`` numbers (std > 0)
            when ``normalize`` is ``"fixed"``.
    """
    if normalize not in NORMALIZE_MODES:
        raise ValueError(f"{source}: normalize must be one of {', '.join(NORMALIZE_MODES)}, got {normalize!r}")
    if normalize == "fixed":
        for key, v in (("mean", mean), ("std", std)):
            ok = isinstance(v, (list, tuple)) and len(v) == channels and all(
                isinstance(a, (int, float)) and not isinstance(a, bool) for a in v)
            if not ok:
                raise ValueError(
                    f"{source}: {key} must be a list of {channels} numbers for normalize 'fixed', got {v!r}"
                )
        if any(s <= 0 for s in std):
            raise ValueError(f"{source}: std must be > 0, got {std!r}")


def channel_stats(x: np.ndarray) -> tuple[list[float], list[float]]:
    """Per-channel mean and std of uint8 images (n, C, H, W), in units of pixel/255."""
    n, c = x.shape[0], x.shape[1]
    s = np.zeros(c)
    ss = np.zeros(c)
    for i in range(0, n, CHUNK):
        b = x[i:i + CHUNK].astype(np.float64) / 255.0
        s += b.sum(axis=(0, 2, 3))
        ss += (b * b).sum(axis=(0, 2, 3))
    count = n * x.shape[2] * x.shape[3]
    mean = s / count
    std = np.sqrt(np.maximum(ss / count - mean**2, 0.0))
    return mean.tolist(), std.tolist()


def scale(x: np.ndarray, mean, std) -> np.ndarray:
    """(x/255 − mean_c)/std_c as float32, chunk by chunk. x: (n, C, H, W) uint8."""
    out = np.empty(x.shape, dtype=np.float32)
    m = np.asarray(mean, dtype=np.float32).reshape(1, -1, 1, 1)
    s = np.asarray(std, dtype=np.float32).reshape(1, -1, 1, 1)
    for i in range(0, x.shape[0], CHUNK):
        out[i:i + CHUNK] = (x[i:i + CHUNK].astype(np.float32) / np.float32(255.0) - m) / s
    return out


def normalize_images(x_train: np.ndarray, x_test: np.ndarray, normalize: str, mean=None, std=None):
    """Scale uint8 image splits (n, C, H, W) to float32.

    Returns:
        (x_train float32, x_test float32, record) where record is the dict stored in meta.json
        under ``normalization``: ``{"mode", "mean", "std"}`` (mean/std per channel, in pixel/255
        units; for ``"none"`` mean 0 and std 1).
    """
    c = x_train.shape[1]
    if normalize == "none":
        mean, std = [0.0] * c, [1.0] * c
    elif normalize == "train":
        mean, std = channel_stats(x_train)
        std = [v if v > 0 else 1.0 for v in std]
    mean, std = [float(v) for v in mean], [float(v) for v in std]
    return scale(x_train, mean, std), scale(x_test, mean, std), {"mode": normalize, "mean": mean, "std": std}


def augmentation_record(augment: bool) -> dict | None:
    """The ``augmentation`` entry of meta.json: :data:`CIFAR_AUGMENTATION` or None."""
    return copy.deepcopy(CIFAR_AUGMENTATION) if augment else None
