import os

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.pop("SNAKEMAKE_PROFILE", None)
