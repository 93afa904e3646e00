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


# ---------------------------------------------------------------------------------------------- under xdist

#: The test modules that take longest (end-to-end Snakemake runs), longest first, as measured by
#: ``pytest -n 2 --durations`` (benchmarks/RESULTS.md, "Test suite"). `make test` runs the suite on
#: ``-n 2 --dist loadscope --no-loadscope-reorder``: each module goes whole to one worker (its
#: module-scoped fixtures, such as one workflow run read by several tests, run once), in the
#: collection order, so these go first and the short modules fill the gaps at the end instead of
#: one long module left alone on one worker while the other idles. (Not ``--dist loadgroup``:
#: pytest-xdist 3.8 marks a group by rewriting ``item._nodeid``, which pytest 9 no longer reads, so
#: ``xdist_group`` marks group nothing.)
LONGEST_FIRST = (
    "tests/papers/test_fedac.py",  # the authors' w0 runs on the real a9a (when shared/ has it): minutes
    "tests/engine/linear_fast/test_tensor_rounds.py",  # the Triton kernels, interpreted on a CPU
    "tests/engine/linear_fast/test_linear_steps.py",
    "tests/workflow/test_one_folder.py",  # the default suite as shipped, then three more config files
    "tests/workflow/test_kill_trials.py",
    "tests/engine/test_benchmark_smoke.py",
    "tests/workflow/test_paper_experiments.py",
    "tests/workflow/test_snakemake.py",
    "tests/workflow/test_real_formats.py",
    "tests/papers/test_local_update.py",
    "tests/workflow/test_reruns.py",
    "tests/workflow/test_damaged_files.py",
)


def pytest_collection_modifyitems(config, items):
    """The modules of :data:`LONGEST_FIRST` first (in that order), then the other modules with a
    ``slow`` test, then the rest; each in the collection order, a module's tests kept together."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    slow = {item.nodeid.split("::", 1)[0] for item in items if item.get_closest_marker("slow")}

    def key(item):
        module = item.nodeid.split("::", 1)[0]
        if module in rank:
            return (0, rank[module])
        return (1, 0) if module in slow else (2, 0)

    items.sort(key=key)  # stable
