import numpy as np
import pyarrow as pa
import pytest

from fedbench.analysis.partition_plots import plot_class_counts


def _counts(K, C=10, seed=0):
    rng = np.random.default_rng(seed)
    m = rng.integers(0, 30, (K, C))
    cols = {"client_id": np.arange(K), "num_samples": m.sum(1)}
    cols.update({f"class_{c}": m[:, c] for c in range(C)})
    return pa.table(cols)


@pytest.mark.parametrize("K", [10, 150])
def test_writes_one_png_that_grows_with_clients(tmp_path, K):
    from PIL import Image

    path = plot_class_counts(_counts(K), tmp_path / "sub" / f"k{K}.png", title="t")
    assert path.exists() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = Image.open(path).size
    assert h > 300 and (K < 100 or h > 2 * w)


def test_accepts_dataframe_and_rejects_bad_tables(tmp_path):
    plot_class_counts(_counts(5).to_pandas(), tmp_path / "df.png")
    assert (tmp_path / "df.png").exists()
    with pytest.raises(ValueError, match="class_"):
        plot_class_counts(pa.table({"client_id": [0, 1]}), tmp_path / "bad.png")
