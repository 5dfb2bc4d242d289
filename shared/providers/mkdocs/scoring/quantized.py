"""A site's embedding rows as a serving instance holds and scans them: int8, one scale per row, multiplied by ONNX
Runtime with the rows packed once (pure: numpy and onnxruntime, no I/O).

Every query reads every row of every searched site, so the scan's cost is the bytes it reads: float32 rows made
latency grow with the corpus (49,000 rows, 75 MB read per query at eight times the sample corpus: 5 to 8 ms of one
core, bound by memory bandwidth). int8 rows are a quarter of that, and onnxruntime's integer product over rows it
packed at load takes 1.6 to 1.9 ms for the same rows (25 sites), one call per site that lets go of the GIL.

- A row is rounded to int8 with its own symmetric scale (its largest magnitude maps to 127): cosines move by about
  0.002 at most, and every eval set's hit@1, hit@5 and MRR@10 stay the same but one set's hit@5, up 0.02
  (`tools/quantized.py`).
- The query stays close to float: it is split into a coarse int8 part and an int8 remainder (about 15 bits), each
  in two unsigned halves, positive and negative parts. Unsigned-by-signed is the fast kernel on x86 and ARM, and
  with both factors below 128 no pair of products can saturate its 16-bit sum (AVX2's `vpmaddubsw`: a zero point
  of 128 lets them, and moved cosines by up to 0.05 here). The integer products are exact, so a row's similarity
  is the same float however and wherever it is computed (federated or per site).
- onnxruntime copies the rows into its own packed form at load; nothing else keeps them (about 1.6 bytes per
  element resident, against 4 for float32 rows).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

_LIMIT = 127
"""The largest magnitude of a rounded row or query part."""


class QuantizedRows:
    """Unit rows held as int8 with one scale per row, ready to score a query (`similarities`).

    Thread-safe: onnxruntime's `run` may be called from several threads at once.
    """

    __slots__ = ("_scales", "_session", "dimensions", "rows")

    def __init__(self, quantized: Quantized) -> None:
        import numpy as np

        columns, largest = quantized
        if columns.ndim != 2 or columns.shape[0] < 1 or largest.shape != (columns.shape[1],):
            raise ValueError(f"columns of shape {columns.shape} with {largest.shape} scales cannot be scanned")
        self.dimensions, self.rows = (int(size) for size in columns.shape)
        self._scales = largest.astype(np.float64) / _LIMIT
        self._session = _session(np.ascontiguousarray(columns, dtype=np.int8)) if self.rows else None

    def __len__(self) -> int:
        return self.rows

    def similarities(self, query: QueryParts) -> npt.NDArray[np.float32]:
        """Every row's dot product with the query (its cosine, for a unit query), as float32; the query split once
        (`split_query`) for all the sites it scans."""
        import numpy as np

        if self._session is None:
            return np.zeros(0, np.float32)
        products = self._session.run(None, {"query": query.parts})[0]
        combined = query.factors @ products.astype(np.float64)
        similarities: npt.NDArray[np.float32] = (combined * self._scales).astype(np.float32)
        return similarities


class Quantized(NamedTuple):
    """Unit rows rounded as the scan holds them (`quantize`), which is also how they are stored (`vectors.ScanRows`):
    a cold instance hands them to the scan as they are."""

    columns: npt.NDArray[np.int8]
    """The rounded rows, transposed (dimensions x rows), each row's largest magnitude at 127."""
    largest: npt.NDArray[np.float32]
    """Each row's largest magnitude: what 127 stands for in its column."""

    def scaled_back(self, count: int) -> npt.NDArray[np.float32]:
        """The first `count` rows as floats again (each within half a step of the row it was rounded from)."""
        import numpy as np

        return (self.columns[:, :count].T * (self.largest[:count, None] / _LIMIT)).astype(np.float32)


def quantize(matrix: npt.NDArray[np.float32] | npt.NDArray[np.float16]) -> Quantized:
    """Rows (float32, or float16 as stored: the same result as their float32 values) rounded to int8 with one
    symmetric scale each. One pass per step and no transpose of floats: 9 to 10 ms for forge's 4,185 rows."""
    import numpy as np

    if matrix.ndim != 2 or matrix.shape[1] < 1:
        raise ValueError(f"rows of shape {matrix.shape} cannot be scanned")
    largest = np.maximum(matrix.max(axis=1), -matrix.min(axis=1)).astype(np.float32)
    factors = np.divide(np.float32(_LIMIT), largest, out=np.zeros_like(largest), where=largest > 0)
    scaled = np.multiply(matrix, factors[:, None], dtype=np.float32)  # at most 127 (a zero row stays zero)
    np.rint(scaled, out=scaled)
    return Quantized(np.ascontiguousarray(scaled.astype(np.int8).T), largest)


class QueryParts(NamedTuple):
    """A query as the scan multiplies it (`split_query`): `factors @ parts` is the query to about 15 bits."""

    parts: npt.NDArray[np.uint8]
    """Four rows of the query's dimensions, each element below 128: a coarse int8 part's positive and negative
    halves, then the remainder's."""
    factors: npt.NDArray[np.float64]
    """What each row is worth: the coarse scale, its negative, the remainder's scale, its negative."""


def split_query(query: npt.NDArray[np.float32]) -> QueryParts:
    """The query as `QueryParts`: coarse int8 with its largest magnitude at 127, then the rest rounded the same way
    (the remainder is at most half a coarse step, so its scale is at most 1/254 of the coarse one)."""
    import numpy as np

    vector = query.astype(np.float64)
    coarse_scale = float(np.abs(vector).max()) / _LIMIT or 1.0
    coarse = np.rint(vector / coarse_scale)
    remainder = vector - coarse * coarse_scale
    fine_scale = float(np.abs(remainder).max()) / _LIMIT or 1.0
    fine = np.clip(np.rint(remainder / fine_scale), -_LIMIT, _LIMIT)
    parts = np.stack([np.maximum(coarse, 0), np.maximum(-coarse, 0), np.maximum(fine, 0), np.maximum(-fine, 0)])
    factors = np.array([coarse_scale, -coarse_scale, fine_scale, -fine_scale])
    return QueryParts(parts.astype(np.uint8), factors)


def _session(columns: npt.NDArray[np.int8]) -> Any:
    """An onnxruntime session multiplying a (parts x dimensions) uint8 query by these int8 columns (dimensions x
    rows), one thread, the columns handed over as an external initializer (copied and packed by onnxruntime; the
    model itself is a few hundred bytes, so no serialized copy of the rows is kept)."""
    import onnxruntime  # type: ignore[import-untyped]  # ships no type hints

    dimensions, rows = columns.shape
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.enable_cpu_mem_arena = False  # the products are a few hundred KB a query: nothing worth keeping
    options.intra_op_num_threads = 1  # a query's sites are scanned one after the other on its thread
    options.add_external_initializers([_ROWS], [onnxruntime.OrtValue.ortvalue_from_numpy(columns)])
    model = scan_model(dimensions, rows)
    return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def scan_model(dimensions: int, rows: int) -> bytes:
    """The scan's ONNX model, serialized: one `MatMulInteger` of a `query` (uint8, any number x `dimensions`) by the
    `rows` initializer (int8, `dimensions` x `rows`, external: handed over at load), giving `products` (int32).

    Written as protobuf by hand, not with the `onnx` package: importing that takes 0.8 s (most of it `ml_dtypes`),
    which a cold instance would pay before its first search by meaning, where nothing else needs it since the
    encoder's rewritten graph is cached. The fields are those of `onnx.proto` (proto2: repeated scalars unpacked);
    `tests/providers/mkdocs/test_quantized.py` checks the bytes parse into the model `onnx.helper` would build.
    """
    length = dimensions * rows
    weights = _fields(
        *(_varint_field(1, size) for size in (dimensions, rows)),  # dims
        _varint_field(2, 3),  # data_type: INT8
        _bytes_field(8, _ROWS.encode()),  # name
        *(
            _bytes_field(13, _fields(_bytes_field(1, key.encode()), _bytes_field(2, value.encode())))
            for key, value in (("location", _ROWS), ("offset", "0"), ("length", str(length)))
        ),  # external_data
        _varint_field(14, 1),  # data_location: EXTERNAL
    )
    node = _fields(
        _bytes_field(1, b"query"), _bytes_field(1, _ROWS.encode()), _bytes_field(2, b"products"),
        _bytes_field(4, b"MatMulInteger"),
    )  # fmt: skip
    graph = _fields(
        _bytes_field(1, node),
        _bytes_field(2, b"scan"),
        _bytes_field(5, weights),
        _bytes_field(11, _tensor_info("query", 2, dimensions)),  # elem_type UINT8
        _bytes_field(12, _tensor_info("products", 6, rows)),  # elem_type INT32
    )
    opset = _fields(_bytes_field(1, b""), _varint_field(2, 13))
    return _fields(_varint_field(1, 8), _bytes_field(7, graph), _bytes_field(8, opset))  # ir_version 8, opset 13


_ROWS = "rows"


def _tensor_info(name: str, element: int, columns: int) -> bytes:
    """A `ValueInfoProto` of a two-dimensional tensor: any number of rows (an unset dimension), `columns` columns."""
    shape = _fields(_bytes_field(1, b""), _bytes_field(1, _varint_field(1, columns)))
    tensor = _fields(_varint_field(1, element), _bytes_field(2, shape))
    return _fields(_bytes_field(1, name.encode()), _bytes_field(2, _bytes_field(1, tensor)))


def _fields(*fields: bytes) -> bytes:
    return b"".join(fields)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _varint_field(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _bytes_field(number: int, value: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(value)) + value
