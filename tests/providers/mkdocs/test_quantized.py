"""The int8 rows a serving instance scans (`QuantizedRows`): exact integer products, close to the float cosines, the
same floats from any thread, and no hold on the float rows they were made from."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from shared.providers.mkdocs.scoring.quantized import Quantized, QuantizedRows, quantize, scan_model, split_query

DIMENSIONS = 384


def units(count: int, seed: int) -> npt.NDArray[np.float32]:
    rows = np.random.default_rng(seed).standard_normal((count, DIMENSIONS)).astype(np.float32)
    unit: npt.NDArray[np.float32] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return unit


def exact(matrix: npt.NDArray[np.float32], query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """What the scan must return, computed without onnxruntime: the rows rounded as documented, the integer products
    in int64 (nothing can saturate), then scaled in float64."""
    largest = np.abs(matrix).max(axis=1)
    factors = np.divide(np.float32(127), largest, out=np.zeros_like(largest), where=largest > 0)
    rounded = np.rint(matrix * factors[:, None]).astype(np.int64)
    assert np.abs(rounded).max(initial=0) <= 127
    scales = largest.astype(np.float64) / 127
    parts, factors = split_query(query)
    products = parts.astype(np.int64) @ rounded.T
    result: npt.NDArray[np.float32] = ((factors @ products.astype(np.float64)) * scales).astype(np.float32)
    return result


def test_similarities_are_the_integer_products_exactly_and_close_to_the_float_cosines() -> None:
    matrix, queries = units(3_000, 1), units(20, 2)
    rows = QuantizedRows(quantize(matrix))

    for query in queries:
        found = rows.similarities(split_query(query))
        assert found.dtype == np.float32 and found.shape == (3_000,)
        np.testing.assert_array_equal(found, exact(matrix, query))
        assert float(np.abs(found - matrix @ query).max()) < 0.005


def test_the_largest_products_do_not_saturate() -> None:
    """Every row element at +-127 and every query part at its largest: a 16-bit pair sum of unsigned-by-signed
    products (x86's fast path) would clip these; the parts are kept below 128 so that it cannot."""
    signs = np.where(np.arange(DIMENSIONS) % 3 == 0, -1.0, 1.0).astype(np.float32)
    matrix = np.stack([signs, -signs, np.ones(DIMENSIONS, np.float32), -np.ones(DIMENSIONS, np.float32)])
    for query in (np.ones(DIMENSIONS, np.float32), signs, -signs):
        found = QuantizedRows(quantize(matrix)).similarities(split_query(query))
        np.testing.assert_array_equal(found, exact(matrix, query))
        np.testing.assert_allclose(found, matrix @ query, rtol=1e-6)


def test_zero_rows_zero_queries_and_no_rows_give_zeros() -> None:
    matrix = units(5, 3)
    matrix[2] = 0
    rows = QuantizedRows(quantize(matrix))
    assert rows.similarities(split_query(units(1, 4)[0]))[2] == 0.0
    np.testing.assert_array_equal(
        rows.similarities(split_query(np.zeros(DIMENSIONS, np.float32))), np.zeros(5, np.float32)
    )
    empty = QuantizedRows(quantize(np.zeros((0, DIMENSIONS), np.float32)))
    assert len(empty) == 0 and empty.similarities(split_query(units(1, 5)[0])).shape == (0,)


def test_rows_of_no_dimension_are_refused() -> None:
    with pytest.raises(ValueError, match="cannot be scanned"):
        quantize(np.zeros((3, 0), np.float32))


def test_scales_that_do_not_fit_the_columns_are_refused() -> None:
    columns, largest = quantize(units(4, 3))
    with pytest.raises(ValueError, match="cannot be scanned"):
        QuantizedRows(Quantized(columns, largest[:3]))


def test_float16_rows_round_as_their_float32_values_do() -> None:
    """Stored rows are float16: whoever rounds them (the writer storing the int8 rows, or an instance given rows
    without them) must get the same int8 rows and scales."""
    stored = units(500, 10).astype(np.float16)
    from_half, from_single = quantize(stored), quantize(stored.astype(np.float32))
    np.testing.assert_array_equal(from_half.columns, from_single.columns)
    np.testing.assert_array_equal(from_half.largest, from_single.largest)
    assert from_half.columns.dtype == np.int8 and from_half.columns.shape == (DIMENSIONS, 500)


def test_the_rows_are_copied_not_held() -> None:
    matrix, query = units(200, 6), units(1, 7)[0]
    rounded = quantize(matrix)
    rows = QuantizedRows(rounded)
    before = rows.similarities(split_query(query))
    rounded.columns[:] = 0  # the loaded payload the int8 rows are views of is dropped once they are handed over
    matrix[:] = 0
    np.testing.assert_array_equal(rows.similarities(split_query(query)), before)


def test_read_only_columns_as_loaded_from_a_payload_are_scanned() -> None:
    matrix, query = units(50, 11), units(1, 12)[0]
    rounded = quantize(matrix)
    payload = rounded.columns.tobytes()
    loaded = np.frombuffer(payload, dtype=np.int8).reshape(rounded.columns.shape)
    assert not loaded.flags.writeable
    found = QuantizedRows(Quantized(loaded, rounded.largest)).similarities(split_query(query))
    np.testing.assert_array_equal(found, exact(matrix, query))


def test_every_thread_gets_the_same_floats() -> None:
    matrix, queries = units(2_000, 8), units(8, 9)
    rows = QuantizedRows(quantize(matrix))
    alone = [rows.similarities(split_query(query)) for query in queries]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(rows.similarities, [split_query(query) for query in [*queries, *queries, *queries]]))
    for number, found in enumerate(together):
        np.testing.assert_array_equal(found, alone[number % len(queries)])


vectors = hnp.arrays(np.float32, DIMENSIONS, elements=st.floats(-1, 1, width=32))


@settings(max_examples=60, deadline=None)
@given(st.lists(vectors, min_size=1, max_size=6), vectors)
def test_any_rows_and_query_score_as_the_integer_reference(
    found: list[npt.NDArray[np.float32]], query: npt.NDArray[np.float32]
) -> None:
    matrix = np.stack(found)
    found_here = QuantizedRows(quantize(matrix)).similarities(split_query(query))
    np.testing.assert_array_equal(found_here, exact(matrix, query))


@settings(max_examples=60, deadline=None)
@given(vectors)
def test_the_query_parts_add_back_up_to_the_query(query: npt.NDArray[np.float32]) -> None:
    parts, factors = split_query(query)
    assert parts.dtype == np.uint8 and parts.shape == (4, DIMENSIONS) and int(parts.max(initial=0)) <= 127
    largest = float(np.abs(query).max(initial=0.0))
    np.testing.assert_allclose(factors @ parts.astype(np.float64), query, atol=largest / 127**2 + 1e-12)


@pytest.mark.parametrize(("dimensions", "rows"), [(384, 1), (384, 4_185), (3, 200_000)])
def test_the_hand_written_model_is_the_one_onnx_would_build(dimensions: int, rows: int) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    weights = TensorProto(name="rows", data_type=TensorProto.INT8, dims=[dimensions, rows])
    weights.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "rows"), ("offset", "0"), ("length", str(dimensions * rows))):
        weights.external_data.add(key=key, value=value)
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["query", "rows"], ["products"])],
        "scan",
        [helper.make_tensor_value_info("query", TensorProto.UINT8, [None, dimensions])],
        [helper.make_tensor_value_info("products", TensorProto.INT32, [None, rows])],
        initializer=[weights],
    )
    expected = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)

    written = scan_model(dimensions, rows)

    assert onnx.load_from_string(written) == expected
    assert written == expected.SerializeToString()


def test_building_the_scan_does_not_import_onnx() -> None:
    """Its import takes most of a second; a cold instance attaching stored vectors must not pay it."""
    script = (
        "import sys, numpy as np\n"
        "from shared.providers.mkdocs.scoring.quantized import QuantizedRows, quantize, split_query\n"
        "rows = QuantizedRows(quantize(np.eye(4, dtype=np.float32)))\n"
        "assert rows.similarities(split_query(np.ones(4, np.float32)))[0] > 0\n"
        "assert 'onnx' not in sys.modules, 'onnx was imported'\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=Path(__file__).resolve().parents[3])
