import os

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.pop("SNAKEMAKE_PROFILE", None)

import torch  # noqa: E402

if not torch.cuda.is_available():  # the CUDA tensor path's Triton kernels run interpreted on the CPU
    os.environ.setdefault("TRITON_INTERPRET", "1")


# ---------------------------------------------------------------------------------------------- real LIBSVM a9a

import hashlib  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

#: The datasets folder beside the clone (CI checks the repository out with it next to the clone): the
#: real LIBSVM a9a in the layout of a ``data.mirror`` (``a9a``, ``a9a.t`` and their ``SHA256SUMS``).
BESIDE_THE_CLONE = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "libsvm"


def real_libsvm_dir() -> tuple[Path | None, str]:
    """(the folder holding the real a9a and a9a.t, "") or (None, why not). Looked for in the folder
    $FEDBENCH_LIBSVM, else the folder of the file $FEDBENCH_A9A, else :data:`BESIDE_THE_CLONE`; the
    files are checked against the folder's SHA256SUMS where it has one."""
    if os.environ.get("FEDBENCH_LIBSVM"):
        d = Path(os.environ["FEDBENCH_LIBSVM"])
    elif os.environ.get("FEDBENCH_A9A"):
        d = Path(os.environ["FEDBENCH_A9A"]).parent
    else:
        d = BESIDE_THE_CLONE
    if not (d / "a9a").is_file() or not (d / "a9a.t").is_file():
        return None, (f"the real LIBSVM a9a (files a9a and a9a.t) is not in {d}: set FEDBENCH_LIBSVM to a folder "
                      "holding them (and their SHA256SUMS), or put them in shared/datasets/libsvm beside the clone")
    sums = d / "SHA256SUMS"
    if sums.is_file():
        for line in sums.read_text().splitlines():
            digest, _, name = line.strip().partition("  ")
            if name in ("a9a", "a9a.t") and hashlib.sha256((d / name).read_bytes()).hexdigest() != digest:
                return None, f"{d / name} does not match its SHA256SUMS entry (a damaged copy)"
    return d, ""


@pytest.fixture(scope="session")
def real_a9a_dir() -> Path:
    """The folder of the real LIBSVM a9a (:func:`real_libsvm_dir`); the test skips, saying why, without it."""
    d, why = real_libsvm_dir()
    if d is None:
        pytest.skip(why)
    return d
