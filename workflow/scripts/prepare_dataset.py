"""Snakemake shim for rule prepare_dataset: fedbench.data.registry.prepare_dataset.

``data.mirror`` and ``data.trust_mirror_checksums`` come from the config at run time (where raw
files are fetched from does not change the dataset: files are checked against their registry
checksums, or, only when the config says so, against the local mirror's SHA256SUMS).

A dataset that cannot be obtained or read (DataUnavailableError, ChecksumError,
CorruptFileError; FileParamError: a local file's parameter, e.g. the file is gone since the
config check) ends the job with its one clear message, written to the job's log *and* to
Snakemake's stderr, instead of a traceback; nothing is left under the dataset's directory,
resources/datasets/<id>-<digest>/ (not even the empty directory Snakemake creates for the output).
"""

import sys
from pathlib import Path

_stderr = sys.stderr
sys.stdout = sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

from fedbench.data.errors import ChecksumError, CorruptFileError, DataUnavailableError  # noqa: E402
from fedbench.data.libsvm import FileParamError  # noqa: E402
from fedbench.data.registry import prepare_dataset  # noqa: E402

data = snakemake.config.get("data") or {}  # noqa: F821  (runtime only: not a param)
out_dir = Path(snakemake.output.meta).parent  # noqa: F821
dataset = snakemake.params.dataset  # noqa: F821 (the config's id; the directory is <id>-<digest>)
try:
    prepare_dataset(
        dataset,
        dict(snakemake.params.cfg),  # noqa: F821
        out_dir,
        mirror=data.get("mirror"),
        trust_mirror_checksums=bool(data.get("trust_mirror_checksums", False)),
        progress=False,
    )
except (DataUnavailableError, ChecksumError, CorruptFileError, FileParamError) as e:
    kind = {DataUnavailableError: "dataset not available", ChecksumError: "checksum mismatch",
            CorruptFileError: "corrupt file", FileParamError: f"parameter {getattr(e, 'key', '')}"}[type(e)]
    msg = f"fedbench: cannot prepare dataset {dataset!r} ({kind}):\n{e}\n"
    print(msg)
    sys.stdout.close()
    if out_dir.is_dir() and not any(out_dir.iterdir()):
        out_dir.rmdir()  # the empty directory Snakemake made for meta.json
    _stderr.write(msg)
    _stderr.flush()
    sys.exit(1)
