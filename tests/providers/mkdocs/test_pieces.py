"""Word-piece signs and the late-interaction rerank of the best pages (`pieces.py`, `Federation._reranked`)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from shared.embedding import MiniLM
from shared.encoders import PieceEncoder
from shared.providers.mkdocs.scoring.pieces import PIECES, Pieces
from shared.providers.mkdocs.scoring.ranking import Ranker
from shared.providers.mkdocs.scoring.vectors import SiteVectors
from tests.support.encoders import WordEncoder
from tests.support.pages import FILLER, page, ranker
from tests.support.ranking import search

QUERY = "how do I stop deployments during the holiday change freeze"
PAGES = [
    page("windows/", "Sync windows", "Sync windows stop deployments at scheduled times, such as a change freeze."),
    page("hooks/", "Resource hooks", "Hooks run before and after deployments, and can stop a sync that fails."),
    page("waves/", "Sync waves", "Waves order deployments so that one resource is synced before another."),
]


@pytest.fixture(scope="module")
def encoder() -> MiniLM:
    return MiniLM.load()


def test_minilm_gives_the_signs_of_each_text_s_first_word_pieces_from_the_same_run(encoder: MiniLM) -> None:
    assert isinstance(encoder, PieceEncoder) and not isinstance(WordEncoder(), PieceEncoder)
    texts = ["a short one", " ".join(["configure the ingress controller"] * 30)]
    vectors, signs, counts = encoder.encode_pieces(texts, PIECES)
    np.testing.assert_allclose(vectors, encoder.encode(texts), atol=1e-6)
    assert signs.shape == (2, PIECES, 384 // 8) and counts.tolist() == [3, PIECES]  # [CLS] and [SEP] left out
    assert not signs[0, 3:].any()  # nothing past a short text's word pieces
    vector, asked = encoder.encode_query_pieces("a short one")
    np.testing.assert_allclose(vector, encoder.encode(["a short one"], query=True)[0], atol=1e-6)
    assert asked.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(asked, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(np.packbits(asked > 0, axis=-1), signs[0, :3])  # the same states, one run each


def test_maxsim_is_the_mean_of_each_question_piece_s_best_match() -> None:
    asked = np.array([[1.0, 0.0] * 4, [0.0, 1.0] * 4], dtype=np.float32) / 2.0  # two unit pieces of 8 dimensions
    agree = np.packbits(asked > 0, axis=-1)  # signs +1 where the piece is positive, -1 elsewhere
    pieces = Pieces(np.zeros((2, PIECES, 1), np.uint8), np.array([2, 0], np.uint8))
    pieces.signs[0, :2] = agree
    # each question piece: 4 dimensions at 1/2 against +1, 4 at 0 against -1, over sqrt(8): 2 / sqrt(8)
    assert pieces.similarity(0, asked) == pytest.approx(2 / np.sqrt(8))
    assert pieces.similarity(1, asked) == 0.0  # a row with no word pieces
    assert pieces.similarity(0, np.zeros((0, 8), np.float32)) == 0.0


def crafted(computed: SiteVectors, index: Ranker, asked: np.ndarray, favoured: str) -> SiteVectors:
    """The vectors with word pieces that agree with the question's on `favoured`'s entries and oppose it elsewhere."""
    assert computed.pieces is not None
    signs, counts = computed.pieces.signs.copy(), computed.pieces.counts.copy()
    for row, entry in enumerate(index.entries):
        kept = asked[:PIECES] if entry.page == favoured else -asked[:PIECES]
        signs[row] = 0
        signs[row, : len(kept)] = np.packbits(kept > 0, axis=-1)
        counts[row] = len(kept)
    return replace(computed, pieces=Pieces(signs, counts))


def test_the_best_pages_are_ordered_again_by_word_pieces_and_the_scores_stay_in_place(encoder: MiniLM) -> None:
    index = ranker(*PAGES, *FILLER)
    computed = SiteVectors.compute(encoder, index.entries)
    vector, asked = encoder.encode_query_pieces(QUERY)
    index.attach(computed)
    before = search(index, QUERY, 10, vector)
    last = before[2].entry.page  # third of the three pages
    index.attach(crafted(computed, index, asked, last))
    after = search(index, QUERY, 10, vector, asked)
    assert before[0].entry.page != last and after[0].entry.page == last
    assert [hit.score for hit in after] == [hit.score for hit in before]  # the scores stay where they were
    assert {hit.entry.page for hit in after} == {hit.entry.page for hit in before}
    assert [hit.entry.page for hit in after][5:] == [hit.entry.page for hit in before][5:]  # only the best five


def test_without_word_pieces_or_a_query_s_there_is_no_rerank(encoder: MiniLM) -> None:
    index = ranker(*PAGES, *FILLER)
    computed = SiteVectors.compute(encoder, index.entries)
    vector, asked = encoder.encode_query_pieces(QUERY)
    index.attach(replace(crafted(computed, index, asked, PAGES[2][0].page), pieces=None))  # stored without them
    before = search(index, QUERY, 10, vector)
    assert [hit.entry.page for hit in search(index, QUERY, 10, vector, asked)] == [hit.entry.page for hit in before]
    index.attach(crafted(computed, index, asked, before[2].entry.page))
    assert [hit.entry.page for hit in search(index, QUERY, 10, vector)] == [hit.entry.page for hit in before]
