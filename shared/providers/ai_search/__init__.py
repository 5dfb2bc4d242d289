"""The Azure AI Search provider (`ai_search`): semantic search over an index of the published pages, search-only."""

from shared.providers.ai_search.errors import AiSearchError
from shared.providers.ai_search.provider import AiSearchProvider, credential

__all__ = ["AiSearchError", "AiSearchProvider", "credential"]
