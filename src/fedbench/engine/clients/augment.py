"""Training-time augmentation of image minibatches, drawn up front from the keyed RNG.

The record (``meta.json`` ``augmentation`` of an image dataset, or a cell spec's ``augmentation``;
see :data:`fedbench.data.images.CIFAR_AUGMENTATION`) describes what happens to each *training*
image each time it is used in a local step, as the FedDyn reference code (``utils_dataset.py``,
``Dataset.__getitem__``) does for CIFAR-10/100:

1. ``horizontal_flip``: with probability ``p`` the image is mirrored left-right;
2. ``random_crop``: with probability ``p`` (FedDyn: 0.5; torchvision ``RandomCrop``: 1, the
   default when ``p`` is absent) the image is zero-padded by ``padding`` pixels on each side
   (value ``fill``, applied to the *normalised* image, as FedDyn does: 0 is the channel mean) and
   a ``size`` x ``size`` window is cut at offsets (dy, dx) drawn uniformly from 0..2·padding.

Test data and evaluation are never augmented. No arithmetic is done on pixel values (only copies
and the fill value), so an augmented batch is bitwise the same whichever engine builds it.

Randomness: for client k in round t, one generator keyed by (seed, t, k, "augment") draws, for
the concatenation of its K minibatches in step order (n = Σ_s |batch_s| rows), first n flip
uniforms, then n crop uniforms, then n row offsets and n column offsets (each in 0..2·padding).
The draws depend only on the key and the batch sizes (themselves keyed), never on the engine,
the processing order, chunking or a resume. A row without a crop gets offsets (padding, padding),
the identity window.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from fedbench.rng import generator

#: Keys an augmentation record may have (anything else is rejected, so a typo is not ignored).
RECORD_KEYS = ("horizontal_flip", "random_crop", "splits")


def check_record(record: dict | None, feature_shape: Sequence[int]) -> dict | None:
    """Validate an augmentation record against the dataset's input shape.

    Returns:
        ``{"flip_p", "crop_p", "padding", "fill"}`` (floats/ints), or None when ``record`` is None
        or applies to no training data.

    Raises:
        ValueError: unknown keys, probabilities outside [0, 1], a negative padding, inputs that are
            not images (C, H, W) or a crop ``size`` other than the image's H = W.
    """
    if record is None:
        return None
    if not isinstance(record, dict):
        raise ValueError(f"augmentation must be a mapping or null (got {record!r})")
    unknown = sorted(set(record) - set(RECORD_KEYS))
    if unknown:
        raise ValueError(f"augmentation: unknown key(s) {', '.join(unknown)}; known: {', '.join(RECORD_KEYS)}")
    if "train" not in record.get("splits", ["train"]):
        return None
    flip = record.get("horizontal_flip") or {}
    crop = record.get("random_crop") or {}
    flip_p = float(flip.get("p", 0.5)) if flip else 0.0
    crop_p = float(crop.get("p", 1.0)) if crop else 0.0
    padding = int(crop.get("padding", 0)) if crop else 0
    fill = float(crop.get("fill", 0.0)) if crop else 0.0
    for name, p in (("horizontal_flip.p", flip_p), ("random_crop.p", crop_p)):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"augmentation.{name} must lie in [0, 1] (got {p})")
    if padding < 0:
        raise ValueError(f"augmentation.random_crop.padding must be >= 0 (got {padding})")
    shape = tuple(feature_shape)
    if len(shape) != 3:
        raise ValueError(f"augmentation needs image inputs (C, H, W); this dataset's inputs have shape {shape}")
    if crop and (int(crop.get("size", shape[1])) != shape[1] or shape[1] != shape[2]):
        raise ValueError(f"augmentation.random_crop.size {crop.get('size')} must equal the image height and width "
                         f"(inputs {shape})")
    if flip_p == 0.0 and (crop_p == 0.0 or padding == 0):
        return None
    return {"flip_p": flip_p, "crop_p": crop_p, "padding": padding, "fill": fill}


def draw(aug: dict, seed: int, round: int, client: int, batch_sizes: Sequence[int]):
    """One client's augmentation draws for one round, per step.

    Args:
        aug: a checked record (:func:`check_record`).
        seed, round, client: the key.
        batch_sizes: |batch_s| for each local step s, in order.

    Returns:
        A list with one ``(flip bool[b], dy int64[b], dx int64[b])`` per step.
    """
    n = int(sum(batch_sizes))
    rng = generator(seed, round, client, "augment")
    flip = rng.random(n) < aug["flip_p"]
    crop = rng.random(n) < aug["crop_p"]
    hi = 2 * aug["padding"] + 1
    dy = rng.integers(0, hi, n)
    dx = rng.integers(0, hi, n)
    pad = aug["padding"]
    dy = np.where(crop, dy, pad).astype(np.int64)
    dx = np.where(crop, dx, pad).astype(np.int64)
    out, pos = [], 0
    for b in batch_sizes:
        out.append((flip[pos:pos + b], dy[pos:pos + b], dx[pos:pos + b]))
        pos += b
    return out


def apply(x: torch.Tensor, flip: torch.Tensor, dy: torch.Tensor, dx: torch.Tensor, padding: int,
          fill: float = 0.0) -> torch.Tensor:
    """Flip then pad-and-crop a batch of images.

    Args:
        x: (N, C, H, W) images (H = W).
        flip: (N,) bool, mirror left-right.
        dy, dx: (N,) int64 window offsets into the padded image, in 0..2·padding
            (``padding, padding`` = no crop).
        padding: pixels added on each side; fill: their value.

    Returns:
        (N, C, H, W): out[n, c, i, j] = P[n, c, dy_n + i, dx_n + j], where P is x[n] flipped (when
        flip_n) and then padded. Values are copied, never computed.
    """
    n, c, h, w = x.shape
    dev = x.device
    flip, dy, dx = flip.to(dev), dy.to(dev), dx.to(dev)
    if padding:
        x = torch.nn.functional.pad(x, (padding, padding, padding, padding), value=fill)
    wp = w + 2 * padding
    rows = dy[:, None] + torch.arange(h, device=dev)[None, :]  # (N, H)
    cols = dx[:, None] + torch.arange(w, device=dev)[None, :]  # (N, W)
    # flipping the unpadded image then padding (symmetric) = flipping the padded image
    cols = torch.where(flip[:, None], wp - 1 - cols, cols)
    b = torch.arange(n, device=dev)[:, None, None]
    out = x.permute(0, 2, 3, 1)[b, rows[:, :, None], cols[:, None, :]]  # (N, H, W, C)
    return out.permute(0, 3, 1, 2).contiguous()
