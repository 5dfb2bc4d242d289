"""App settings: keys, derived rules, list forms, overrides, and start-up failures that name the key."""

from __future__ import annotations

import pytest

from shared.errors import ConfigurationError
from shared.settings import DEFAULT_SITES, DocumentationSettings, load_settings

P = "Forge__Documentation__"


def test_defaults_follow_the_spec() -> None:
    settings = load_settings({})
    assert settings.origin == "https://docs.saif.com"
    assert settings.default_site == "forge"
    assert settings.sites == DEFAULT_SITES
    assert settings.search_index_path == "/search/search_index.json"
    assert settings.cache_file_name_template == "{site}-docs-search-index.json"
    assert settings.cache_duration_hours == 1
    assert settings.raw_markdown_url_pattern == "{base}/{path}.md"
    assert settings.base_url("forge") == "https://docs.saif.com/forge"
    assert settings.index_url("forge") == "https://docs.saif.com/forge/search/search_index.json"


def test_comma_separated_sites_are_trimmed_deduplicated_and_the_default_inserted() -> None:
    settings = load_settings({P + "Sites": " alpha, Beta ,, beta,ALPHA, ", P + "DefaultSite": "home"})
    assert settings.sites == ("home", "alpha", "Beta")


def test_indexed_sites_form_is_read_in_numeric_order() -> None:
    env = {P + "Sites__10": "k", P + "Sites__2": "b", P + "Sites__0": "forge"}
    assert load_settings(env).sites == ("forge", "b", "k")


def test_when_both_list_forms_are_given_the_indexed_form_wins() -> None:
    env = {P + "Sites": "a,b", P + "Sites__1": "d", P + "Sites__0": "c", P + "Inbound__Tokens": "t1,t2"}
    settings = load_settings({**env, P + "Inbound__Tokens__0": "t3"})
    assert settings.sites == ("forge", "c", "d")
    assert [token.get_secret_value() for token in settings.inbound.tokens] == ["t3"]


def test_keys_match_case_insensitively_like_the_functions_host() -> None:
    settings = load_settings(
        {"FORGE__DOCUMENTATION__ORIGIN": "http://127.0.0.1:1/", "forge__documentation__cache__container": "abc"}
    )
    assert settings.origin == "http://127.0.0.1:1"
    assert settings.cache.container == "abc"


@pytest.mark.parametrize("hours", ["0", "-3"])
def test_cache_duration_of_zero_or_less_means_one_hour(hours: str) -> None:
    assert load_settings({P + "CacheDurationHours": hours}).cache_duration_hours == 1


def test_empty_raw_markdown_pattern_disables_raw_markdown_but_other_empty_settings_mean_unset() -> None:
    settings = load_settings({P + "RawMarkdownUrlPattern": "", P + "Search__MinScore": "", P + "Origin": ""})
    assert settings.raw_markdown_url_pattern is None
    assert settings.origin == "https://docs.saif.com"


def test_search_index_overrides_accept_paths_and_same_origin_urls() -> None:
    env = {
        P + "Origin": "http://127.0.0.1:8000",
        P + "SearchIndexOverrides": '{"Cloud-Foundations": "search/search_index.json",'
        ' "forge": "http://127.0.0.1:8000/forge/other.json"}',
    }
    settings = load_settings(env)
    assert settings.index_url("cloud-foundations") == "http://127.0.0.1:8000/search/search_index.json"
    assert settings.index_url("forge") == "http://127.0.0.1:8000/forge/other.json"
    assert settings.index_url("iac-okta-modules") == "http://127.0.0.1:8000/iac-okta-modules/search/search_index.json"


@pytest.mark.parametrize(
    ("env", "key", "words"),
    [
        ({P + "Origin": "docs.example.com"}, "Origin", "absolute http"),
        ({P + "Origin": "ftp://docs.example.com"}, "Origin", "absolute http"),
        ({P + "CacheDurationHours": "soon"}, "CacheDurationHours", "number"),
        ({P + "SearchIndexOverrides": "{not json"}, "SearchIndexOverrides", "JSON"),
        ({P + "SearchIndexOverrides": '["a"]'}, "SearchIndexOverrides", "JSON object"),
        ({P + "SearchIndexOverrides": '{"nowhere": "/x.json"}'}, "SearchIndexOverrides", "not a configured site"),
        ({P + "SearchIndexOverrides": '{"forge": "https://evil.example/x.json"}'}, "SearchIndexOverrides", "outside"),
        ({P + "SearchIndexOverrides": '{"forge": "/../x.json"}'}, "SearchIndexOverrides", "under the origin"),
        ({P + "RawMarkdownUrlPattern": "{base}/{file}.md"}, "RawMarkdownUrlPattern", "placeholder"),
        ({P + "SearchIndexPath": "https://elsewhere/x.json"}, "SearchIndexPath", "relative"),
        ({P + "Cache__Container": "Bad_Name"}, "Cache__Container", "container name"),
        ({P + "Sites": "ok,bad/name"}, "Sites", "not a site name"),
        ({P + "Sites__x": "a"}, "Sites", "numbered"),
        ({P + "Warmup__PageCheckConcurrency": "0"}, "Warmup__PageCheckConcurrency", "greater than or equal to 1"),
        ({P + "Warmup__PageCheckSeconds": "0"}, "Warmup__PageCheckSeconds", "greater than 0"),
    ],
)
def test_invalid_configuration_fails_with_one_message_naming_the_key(env: dict[str, str], key: str, words: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        load_settings(env)
    assert str(caught.value).startswith(P + key), str(caught.value)
    assert words in str(caught.value)


def test_settings_are_read_from_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(P + "Sites", "one,two")
    monkeypatch.setenv("AzureWebJobsStorage", "UseDevelopmentStorage=true")
    settings = load_settings()
    assert settings.sites == ("forge", "one", "two")
    assert settings.host_storage is not None
    assert settings.host_storage.get_secret_value() == "UseDevelopmentStorage=true"
    assert "UseDevelopmentStorage" not in repr(settings)


def test_a_given_mapping_is_all_that_is_read_even_an_empty_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty mapping once counted as "nothing given" and the process environment was read instead."""
    monkeypatch.setenv(P + "DefaultSite", "x")
    monkeypatch.setenv("APPLICATIONINSIGHTS_CONNECTION_STRING", "InstrumentationKey=00000000-0000-0000-0000-0")
    monkeypatch.setenv("WEBSITE_HOSTNAME", "elsewhere.example")
    settings = load_settings({})
    assert settings.default_site == "forge"
    assert settings.applicationinsights_connection_string is None and settings.website_hostname is None
    assert DocumentationSettings() == settings  # the model on its own reads nothing either
    assert load_settings().default_site == "x"  # only `load_settings()` reads the process environment


def test_settings_are_read_by_their_app_setting_names_only() -> None:
    settings = load_settings({P + "default_site": "by-field-name", "DefaultSite": "without-the-prefix"})
    assert settings.default_site == "forge"


# -- provider sections


def test_optional_provider_sections_are_absent_until_a_key_of_theirs_is_set() -> None:
    settings = load_settings({})
    assert settings.ai_search is None and settings.remote is None and settings.identity.client_id is None


def test_keys_inside_optional_sections_are_read() -> None:
    settings = load_settings(
        {
            P + "AiSearch__Endpoint": "https://search.example.net",
            P + "aisearch__INDEXNAME": "docs-v2",
            P + "AiSearch__ApiKey": "local-only-key",
            P + "Remote__Endpoint": "https://other.example.net/api/mcp",
            P + "Remote__Token": "secret-token",
            P + "Identity__ClientId": "00000000-0000-0000-0000-000000000001",
        }
    )
    assert settings.ai_search is not None and settings.remote is not None
    assert (settings.ai_search.endpoint, settings.ai_search.index_name) == ("https://search.example.net", "docs-v2")
    assert settings.ai_search.semantic_configuration_name == "docs-semantic"  # the spec's code default
    assert settings.ai_search.api_key is not None and settings.ai_search.api_key.get_secret_value() == "local-only-key"
    assert "local-only-key" not in repr(settings) and "secret-token" not in repr(settings)
    assert settings.remote.endpoint == "https://other.example.net/api/mcp"
    assert settings.identity.client_id == "00000000-0000-0000-0000-000000000001"


@pytest.mark.parametrize(
    ("key", "read"),
    [
        ("AiSearch__SearchFilter", lambda s: s.ai_search.search_filter),
        ("AiSearch__MkDocsSitePrefix", lambda s: s.ai_search.mkdocs_site_prefix),
        ("RawMarkdownUrlPattern", lambda s: s.raw_markdown_url_pattern),
    ],
    ids=["no filter", "no prefix stripping", "no raw Markdown"],
)
def test_an_empty_value_is_meaningful_where_the_spec_says_so(key: str, read: object) -> None:
    settings = load_settings({P + "AiSearch__Endpoint": "https://search.example.net", P + key: ""})
    assert read(settings) in ("", None)  # type: ignore[operator]


def test_an_empty_value_elsewhere_means_unset() -> None:
    settings = load_settings({P + "AiSearch__Endpoint": "https://search.example.net", P + "AiSearch__IndexName": ""})
    assert settings.ai_search is not None and settings.ai_search.index_name == "saif-docs"
    assert load_settings({P + "AiSearch__SearchFilter": "format eq '.html'"}).ai_search.search_filter == (  # type: ignore[union-attr]
        "format eq '.html'"
    )


@pytest.mark.parametrize("prefix", ["embeddings/", "derived/", "Derived/"])
def test_the_cache_file_name_template_may_not_take_the_artifacts_names(prefix: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        load_settings({P + "CacheFileNameTemplate": prefix + "{site}.json"})
    assert caught.value.key == P + "CacheFileNameTemplate" and prefix.lower() in str(caught.value)


def test_a_retired_setting_left_set_is_said_at_start_up(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="shared.settings"):
        settings = load_settings({"Forge__Documentation__Mcp__MaxContentChars": "50000"})
    assert settings.mcp.answer_budget_chars == 24_000
    assert "Mcp__MaxContentChars is no longer read: set Forge__Documentation__Mcp__AnswerBudgetChars" in caplog.text
