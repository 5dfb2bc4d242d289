"""BM25F's inverted lists: a view's fields turned into postings, and a query's weights over them (pure).

A `FieldView` is one BM25F view of a site (its fields weighted and length-normalised before one saturation, so a
title word counts more than a body word and repetition cannot win on its own); its `Postings` are packed arrays a
query walks only for its own terms. `ranking.py` says how the views are combined into a page's score.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shared.providers.mkdocs.scoring.text import Query

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class _Builder:
    """Collects (term, document, value) triples compactly while a view is built, then packs them.

    The views of one site share one vocabulary (`terms`): each term string and its dictionary slot are held once
    per site, not once per view."""

    def __init__(self, terms: dict[str, int] | None = None) -> None:
        self.ids: dict[str, int] = terms if terms is not None else {}
        self.terms = array("i")
        self.numbers = array("i")
        self.values = array("d")

    def add(self, term: str, number: int, value: float) -> None:
        self.terms.append(self.ids.setdefault(term, len(self.ids)))
        self.numbers.append(number)
        self.values.append(value)

    def pack(self, documents: int) -> Postings:
        """The triples grouped by term, each term's documents in the order they were added."""
        import numpy as np

        terms = np.frombuffer(self.terms, dtype=np.int32)
        order = np.argsort(terms, kind="stable")
        offsets = np.zeros(len(self.ids) + 1, dtype=np.int64)
        np.cumsum(np.bincount(terms, minlength=len(self.ids)), out=offsets[1:])
        numbers = np.frombuffer(self.numbers, dtype=np.int32)[order]
        values = np.frombuffer(self.values, dtype=np.float64)[order]
        return Postings(documents, self.ids, array("q", offsets.tobytes()), numbers, values)


@dataclass(frozen=True, slots=True)
class Postings:
    """Term -> (document numbers, values), packed: one array of each for all terms, sliced per term.

    Packed, a view takes about 16 bytes per posting (the four sample sites: 5 MB); as Python lists of tuples it
    took about 100 (75 MB). A query adds each of its terms' values into an array of per-document sums, term by
    term in the query's order, exactly as a loop over the lists did.
    """

    documents: int
    terms: dict[str, int]
    """Term -> its number in the site's vocabulary (shared by its views): its slice is
    `offsets[number]:offsets[number + 1]`, empty for a term of another view (or beyond `offsets`: one numbered
    after this view was packed)."""
    offsets: array[int] | memoryview
    """int64 (an `array`, or a view of a prebuilt ranker's payload), one more than the terms numbered when this view
    was packed; Python integers when indexed."""
    numbers: npt.NDArray[np.int32] | npt.NDArray[np.uint16]
    """int32 as built; as a prebuilt ranker stored them (uint16 for up to 65,536 documents) once loaded."""
    values: npt.NDArray[np.float64] | CodedValues

    def _slice(self, term: str) -> tuple[int, int]:
        number = self.terms.get(term)
        if number is None or number + 1 >= len(self.offsets):
            return 0, 0
        return self.offsets[number], self.offsets[number + 1]

    def of(self, term: str) -> list[tuple[int, float]]:
        """The term's (document, value) pairs, in document order."""
        start, end = self._slice(term)
        return list(zip(self.numbers[start:end].tolist(), self.values[start:end].tolist(), strict=True))

    def frequency(self, term: str) -> int:
        """How many documents hold the term."""
        start, end = self._slice(term)
        return end - start

    def sums(
        self, weights: dict[str, float], *, matched: bool = True
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64] | None]:
        """Each document's weighted score and (unless not wanted) the query weight it matched: the hot loop of every
        query."""
        import numpy as np

        terms, offsets, last = self.terms, self.offsets, len(self.offsets) - 1
        slices = [
            (start, end, weight)
            for term, weight in weights.items()
            if (number := terms.get(term)) is not None
            and number < last
            and (start := offsets[number]) != (end := offsets[number + 1])
        ]
        if not slices:
            return np.zeros(self.documents), np.zeros(self.documents) if matched else None
        # One pass in query-term order: bincount adds each document's contributions in that order, as a loop would.
        numbers = np.concatenate([self.numbers[start:end] for start, end, _ in slices])
        weight = np.repeat([w for _, _, w in slices], [end - start for start, end, _ in slices])
        values = np.concatenate([self.values[start:end] for start, end, _ in slices])
        scores = np.bincount(numbers, weights=weight * values, minlength=self.documents).astype(np.float64, copy=False)
        if not matched:
            return scores, None
        shares = np.bincount(numbers, weights=weight, minlength=self.documents).astype(np.float64, copy=False)
        return scores, shares

    def coordinated(self, weights: dict[str, float]) -> npt.NDArray[np.float64]:
        """Every document's score scaled by the share of the query weight it matched (0 where none)."""
        scores, matched = self.sums(weights)
        assert matched is not None
        return coordinate(scores, matched)


class CodedValues:
    """A loaded view's values as its prebuilt ranker stores them: a code per posting naming one of the view's
    distinct values (a few thousand among a hundred thousand postings). A slice gives the very floats, gathered
    when a query reads them: two bytes held a posting (uint16 codes), where float64 values took eight (17 MB at
    eight times the sample corpus)."""

    __slots__ = ("codes", "distinct")

    def __init__(self, distinct: npt.NDArray[np.float64], codes: npt.NDArray[np.integer[Any]]) -> None:
        self.distinct = distinct
        self.codes = codes

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, key: slice) -> npt.NDArray[np.float64]:
        found: npt.NDArray[np.float64] = self.distinct[self.codes[key]]
        return found

    def __array__(self, dtype: Any = None, copy: Any = None) -> npt.NDArray[Any]:
        every: npt.NDArray[Any] = self.distinct[self.codes]
        return every if dtype is None else every.astype(dtype)


@dataclass(slots=True)
class FieldView:
    """One BM25F view: postings of saturated field-weighted term frequencies, and IDF per term."""

    documents: int
    postings: Postings
    idf: array[float] = field(default_factory=lambda: array("d"))
    """IDF by term number, 0 for a term the view does not hold (a held term's IDF is always above 0)."""

    @classmethod
    def build(
        cls,
        docs: Sequence[Sequence[list[str]]],
        fields: Sequence[tuple[float, float]],
        terms: dict[str, int],
        k1: float,
    ) -> FieldView:
        """Index `docs` (fields in `fields` order, saturated by `k1`), numbering new terms in the site's vocabulary
        `terms`."""
        builder = _Builder(terms)
        count = max(1, len(docs))
        averages = [max(1.0, sum(len(doc[f]) for doc in docs) / count) for f in range(len(fields))]
        for number, doc in enumerate(docs):
            blended: dict[str, float] = {}
            # The last field is the body, the largest: it seeds the blend in one comprehension.
            for (weight, b), words, average in reversed(list(zip(fields, doc, averages, strict=True))):
                scale = weight / (1 - b + b * len(words) / average)
                if not blended:
                    blended = {term: occurrences * scale for term, occurrences in Counter(words).items()}
                    continue
                for term, occurrences in Counter(words).items():
                    blended[term] = blended.get(term, 0.0) + occurrences * scale
            for term, tf in blended.items():
                builder.add(term, number, tf / (k1 + tf))
        return cls.of(len(docs), builder.pack(len(docs)))

    @classmethod
    def of(cls, documents: int, postings: Postings) -> FieldView:
        """The view over packed postings, each term's IDF from how many documents hold it (its slice's length)."""
        import numpy as np

        view = cls(documents, postings)
        frequencies = np.diff(np.frombuffer(postings.offsets, dtype=np.int64))
        # A site has a few hundred distinct document frequencies among thousands of terms: each IDF is computed once,
        # by `term_idf` itself (the same float), and laid out by term.
        if not len(frequencies):
            view.idf = array("d")
            return view
        by_frequency = np.zeros(int(frequencies.max()) + 1, dtype=np.float64)
        for df in np.flatnonzero(np.bincount(frequencies)).tolist():
            by_frequency[df] = view.term_idf(df) if df else 0.0
        view.idf = array("d", by_frequency[frequencies].tobytes())
        return view

    def idf_of(self, term: str) -> float:
        """The term's IDF in this view, 0 when the view does not hold it."""
        number = self.postings.terms.get(term)
        return self.idf[number] if number is not None and number < len(self.idf) else 0.0

    def term_idf(self, df: int) -> float:
        return math.log(1 + (self.documents - df + 0.5) / (df + 0.5))

    def weights(self, query: Query) -> dict[str, float]:
        """Each matchable query term's IDF over the query's maximum.

        Joined words add evidence, not maximum, and are capped at the query's most informative word: an
        alternative spelling of two words says no more than they do, however rare it is (`DNS records` must not
        let every `DNSRecord` outweigh the rest of the query).
        """
        terms, held, count = self.postings.terms, self.idf, len(self.idf)
        idf = {
            term: held[number] if (number := terms.get(term)) is not None and number < count else 0.0
            for term in (*query.words, *query.joined)
        }
        maximum = sum(idf[term] or self.term_idf(0) for term in query.words)
        weights = {term: idf[term] / maximum for term in query.words if idf[term]}
        cap = max(weights.values(), default=0.0)
        for term in query.joined:
            if idf[term]:
                weights[term] = min(idf[term] / maximum, cap)
        return weights


def coordinate(scores: npt.NDArray[np.float64], matched: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Each document's summed score times the share of the query weight it matched, when it matched less than all."""
    import numpy as np

    coordinated: npt.NDArray[np.float64] = np.where(matched < 1.0, scores * matched, scores)
    return coordinated
