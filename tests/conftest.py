import os

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.pop("SNAKEMAKE_PROFILE", None)

import torch  # noqa: E402

if not torch.cuda.is_available():  # the CUDA tensor path's Triton kernels run interpreted on the CPU
    os.environ.setdefault("TRITON_INTERPRET", "1")
