import pyarrow as pa
import pytest

from fedbench.metrics.schema import METRICS_SCHEMA, check_metrics_table


def _row(**kw):
    row = {"experiment": "e", "dataset": "d", "partition": "p", "algorithm": "a", "algorithm_name": "fedavg",
           "hparams_id": "h", "seed": 0, "round": 1, "clients_sampled": 2, "train_loss": 1.0, "test_loss": 1.0,
           "test_accuracy": 0.5, "uplink_floats": 10, "uplink_nonzeros": 9, "uplink_entropy_bits": 1.5,
           "downlink_floats": 10, "wall_seconds": 0.1, "status": "ok"}
    return row | kw


def test_valid_table_passes():
    check_metrics_table(pa.Table.from_pylist([_row(), _row(round=2)], schema=METRICS_SCHEMA))


def test_missing_column_wrong_type_and_bad_status_are_named():
    t = pa.Table.from_pylist([_row()], schema=METRICS_SCHEMA)
    with pytest.raises(ValueError, match="test_accuracy"):
        check_metrics_table(t.drop(["test_accuracy"]))
    with pytest.raises(ValueError, match="round"):
        check_metrics_table(t.set_column(t.schema.get_field_index("round"), "round", pa.array([1.0])))
    with pytest.raises(ValueError, match="status"):
        check_metrics_table(pa.Table.from_pylist([_row(status="weird")], schema=METRICS_SCHEMA))


def test_added_columns_are_nullable_schema_columns():
    from fedbench.metrics.schema import ADDED_COLUMNS, ALGORITHM_METRICS

    assert {name for name, _ in ALGORITHM_METRICS} == {"boosted_pct", "y_norm", "x_step_norm", "y_step_norm",
                                                        "tau_eff"}
    for name in ADDED_COLUMNS:
        assert METRICS_SCHEMA.field(name).nullable and METRICS_SCHEMA.field(name).type == pa.float64()
    t = pa.Table.from_pylist([_row()], schema=METRICS_SCHEMA)  # a row without them: nulls
    check_metrics_table(t)
    assert t.column("boosted_pct").to_pylist() == [None]
