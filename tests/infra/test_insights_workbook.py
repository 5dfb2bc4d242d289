"""The usage insights workbook (infra/app/insights-workbook.bicep and its insights-workbook.json, #57): a shared
workbook on the Application Insights component, named by a GUID, that charts the app's four usage counters and
nothing else.

The counters carry counts and enumerated attributes only, never a question or any other text; so every query reads
`customMetrics` for those four names alone, reads no dimension but their attributes, and compares them with nothing
but the documented values. A query is held to a small KQL vocabulary: a column or table it does not name here (a
`message`, `operation_Name`, `customEvents`, a bare `customDimensions`) fails the test.

Shapes follow Microsoft's templates reference for Microsoft.Insights/workbooks@2023-06-01 (`kind: 'shared'`,
`category`, `displayName`, `serializedData`, `sourceId`) and the AppMetrics / customMetrics tables (`valueSum`,
`customDimensions`: the OpenTelemetry attributes under their own names).
"""

from __future__ import annotations

import importlib
import json
import re
from functools import cache
from typing import Any, cast

import pytest

from tests.infra.test_bicep import INFRA, MAIN, accessor, body, parse

MODULE = INFRA / "app" / "insights-workbook.bicep"
WORKBOOK_JSON = MODULE.with_name("insights-workbook.json")

SITE, VERSION = "smithy.docs.site", "smithy.docs.version"
METRICS: dict[str, dict[str, set[str] | None]] = {
    "smithy.docs.usage.searches": {
        SITE: None,
        VERSION: None,
        "smithy.docs.outcome": {"answered", "empty", "floored"},
        "smithy.docs.kind": {"page", "code"},
    },
    "smithy.docs.usage.reads": {SITE: None, VERSION: None},
    "smithy.docs.usage.feedback": {
        SITE: None,
        "smithy.docs.feedback.kind": {"outdated", "wrong", "missing", "unclear"},
    },
    "smithy.docs.usage.dropped": {"smithy.docs.reason": {"queue_full", "store_failed"}},
}
"""Each usage counter the app exports, its attributes, and the values of those that are enumerations (None: a site
or a version, `*` and `default` included)."""

ATTRIBUTES = {key for attributes in METRICS.values() for key in attributes}
VALUES = {value for attributes in METRICS.values() for values in attributes.values() for value in values or ()}
LITERALS = set(METRICS) | ATTRIBUTES | VALUES | {".", "*", "default"}
"""Every string a query may hold: the counters' names, their attribute keys and values (and the `.` that splits a
counter's name into a tile's title)."""

VOCABULARY = {
    # the table and its columns
    "customMetrics",
    "name",
    "valueSum",
    "timestamp",
    "customDimensions",
    # operators, functions, keywords
    "where",
    "in",
    "extend",
    "summarize",
    "by",
    "sum",
    "sumif",
    "bin",
    "tostring",
    "split",
    "round",
    "order",
    "desc",
    "asc",
}
"""What a query may name besides the columns it defines itself: no other table, column or operator (no `union`,
`join`, `project`, `take`: nothing that could bring a row's other columns into view)."""

VIEWS = {
    "totals",
    "searches-per-day",
    "unanswered-per-site-and-version",
    "reads-per-day",
    "feedback-by-site-and-kind",
    "dropped-per-day",
}

STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
NUMBER = re.compile(r"\b\d+(?:\.\d+)?[a-z]*\b")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DEFINED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*=(?!=)")
DIMENSION = re.compile(r'customDimensions\["([^"]*)"\]')


@cache
def workbook_resource() -> dict[str, Any]:
    (found,) = [r for r in parse(MODULE)["resources"].values() if r["type"] == "Microsoft.Insights/workbooks"]
    return cast("dict[str, Any]", found)


@cache
def workbook() -> dict[str, Any]:
    return cast("dict[str, Any]", json.loads(WORKBOOK_JSON.read_text(encoding="utf-8")))


def items(kind: int) -> dict[str, dict[str, Any]]:
    return {item["name"]: item for item in workbook()["items"] if item["type"] == kind}


def queries() -> dict[str, str]:
    return {name: item["content"]["query"] for name, item in items(3).items()}


def named_metrics(query: str) -> set[str]:
    """The counters a query's `where name == ...` or `where name in (...)` keeps."""
    single = re.search(r'\| where name == "([^"]+)"', query)
    if single:
        return {single[1]}
    several = re.search(r"\| where name in \(([^)]*)\)", query)
    assert several, "every query keeps the usage counters by name"
    return set(STRING.findall(several[1]))


# --- the resource ---------------------------------------------------------------------------------------------


def test_the_workbook_is_a_shared_workbook_on_the_component_named_by_a_guid() -> None:
    resource = workbook_resource()
    assert (resource["api_version"], resource["existing"]) == ("2023-06-01", False)
    config = body(resource)
    component = accessor("applicationInsights", "id")
    assert config["name"] == {
        "function": {
            "type": "guid",
            "parameters": {"base_string": component, "extra_string_1": "usage-insights-workbook"},
        }
    }, "a deterministic GUID: a redeployment updates the workbook instead of adding one"
    assert (config["kind"], config["location"], config["tags"]) == ("shared", "location", "tags")
    properties = config["properties"]
    assert properties["category"] == "workbook"
    assert properties["sourceId"] == component
    assert "${applicationInsightsName}" in properties["displayName"], "display names are unique per subscription"
    (existing,) = [r for r in parse(MODULE)["resources"].values() if r["existing"]]
    assert (existing["type"], body(existing)["name"]) == ("Microsoft.Insights/components", "applicationInsightsName")


def test_serialized_data_is_the_json_file_with_the_component_to_fall_back_on() -> None:
    serialized = body(workbook_resource())["properties"]["serializedData"]["function"]
    assert serialized["type"] == "string"
    union = serialized["parameters"]["value_to_convert"]["function"]
    assert union["type"] == "union"
    loaded, extra = union["parameters"]["arg_1"]["function"], union["parameters"]["arg_2"]
    assert loaded["type"] == "load_json_content"
    assert loaded["parameters"]["file_path"] == WORKBOOK_JSON.name and loaded["parameters"]["json_path"] is None
    assert extra == {"fallbackResourceIds": [accessor("applicationInsights", "id")]}
    document = workbook()
    assert document["version"] == "Notebook/1.0"
    assert "fallbackResourceIds" not in document, "the module sets the component"
    assert "/subscriptions/" not in WORKBOOK_JSON.read_text(encoding="utf-8"), "no hard-coded resource"
    names = [item["name"] for item in document["items"]]
    assert len(names) == len(set(names)), "step names are unique"


def test_the_workbook_says_what_it_shows_and_where_the_questions_are() -> None:
    (header,) = items(1).values()
    text = header["content"]["json"]
    assert "GET /api/admin/insights" in text
    assert "never in telemetry" in text
    assert "never a question" in text
    assert workbook()["items"][0] is header, "the header comes first"


def test_a_time_range_parameter_drives_every_query() -> None:
    (parameters,) = items(9).values()
    (time_range,) = parameters["content"]["parameters"]
    assert (time_range["name"], time_range["type"], time_range["isRequired"]) == ("TimeRange", 4, True)
    assert time_range["value"]["durationMs"] in {
        v["durationMs"] for v in time_range["typeSettings"]["selectableValues"]
    }
    assert set(items(3)) == VIEWS
    for name, item in items(3).items():
        content = item["content"]
        assert content["version"] == "KqlItem/1.0", name
        assert content["timeContextFromParameter"] == "TimeRange", name
        assert (content["queryType"], content["resourceType"]) == (0, "microsoft.insights/components"), name


# --- what the queries read ------------------------------------------------------------------------------------


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_every_query_reads_only_the_usage_counters(view: str) -> None:
    query = queries()[view]
    assert query.startswith("customMetrics\n| where name "), "the usage counters first, before anything else"
    assert named_metrics(query) <= set(METRICS)
    assert "'" not in query, "double-quoted strings only (every literal is checked)"
    unknown = set(STRING.findall(query)) - LITERALS
    assert not unknown, f"strings no usage counter carries: {unknown}"
    assert "sum(valueSum)" in query or "sumif(valueSum," in query, "counters add up their sums (delta counts)"


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_no_query_names_a_column_or_table_beyond_the_counters_own(view: str) -> None:
    """Each stage may name the vocabulary and what earlier stages defined: nothing else of a row comes into view."""
    defined: set[str] = set()
    for stage in queries()[view].split("|"):
        code = NUMBER.sub(" ", STRING.sub(" ", stage))
        here = set(DEFINED.findall(code))
        used = set(IDENTIFIER.findall(DEFINED.sub(" ", code)))
        unknown = used - VOCABULARY - defined
        assert not unknown, f"{view}: {stage.strip()!r} names {unknown}"
        assert not here & VOCABULARY, f"{view}: {stage.strip()!r} redefines {here & VOCABULARY}"
        defined |= here


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_no_query_reads_a_dimension_its_counters_do_not_carry(view: str) -> None:
    query = queries()[view]
    carried = {key for metric in named_metrics(query) for key in METRICS[metric]}
    keys = set(DIMENSION.findall(query))
    assert keys <= carried, f"{view} reads {keys - carried}"
    assert query.count("customDimensions") == len(DIMENSION.findall(query)), "customDimensions by key only"


def test_searches_per_day_are_split_by_outcome() -> None:
    query = queries()["searches-per-day"]
    assert named_metrics(query) == {"smithy.docs.usage.searches"}
    assert 'outcome = tostring(customDimensions["smithy.docs.outcome"])' in query
    assert query.endswith("by outcome, bin(timestamp, 1d)")
    assert items(3)["searches-per-day"]["content"]["visualization"] in {"timechart", "barchart"}


def test_the_unanswered_share_is_empty_and_floored_per_site_and_version() -> None:
    query = queries()["unanswered-per-site-and-version"]
    assert named_metrics(query) == {"smithy.docs.usage.searches"}
    for key in (SITE, VERSION, "smithy.docs.outcome"):
        assert f'customDimensions["{key}"]' in query
    assert 'sumif(valueSum, outcome == "empty")' in query
    assert 'sumif(valueSum, outcome == "floored")' in query
    assert re.search(r"by site, docsVersion\n", query)
    assert "100.0 * (emptied + floored) / searches" in query
    assert items(3)["unanswered-per-site-and-version"]["content"]["visualization"] == "table"


def test_reads_are_counted_per_site_per_day() -> None:
    query = queries()["reads-per-day"]
    assert named_metrics(query) == {"smithy.docs.usage.reads"}
    assert query.endswith("by site, bin(timestamp, 1d)")


def test_feedback_is_counted_by_site_for_every_kind() -> None:
    query = queries()["feedback-by-site-and-kind"]
    assert named_metrics(query) == {"smithy.docs.usage.feedback"}
    kinds = METRICS["smithy.docs.usage.feedback"]["smithy.docs.feedback.kind"]
    assert kinds is not None
    for kind in kinds:
        assert f'sumif(valueSum, feedbackKind == "{kind}")' in query, kind
    assert re.search(r"by site\n", query)


def test_dropped_events_are_counted_by_reason() -> None:
    query = queries()["dropped-per-day"]
    assert named_metrics(query) == {"smithy.docs.usage.dropped"}
    assert 'reason = tostring(customDimensions["smithy.docs.reason"])' in query
    assert query.endswith("by reason, bin(timestamp, 1d)")


def test_the_totals_cover_all_four_counters() -> None:
    assert named_metrics(queries()["totals"]) == set(METRICS)
    assert items(3)["totals"]["content"]["visualization"] == "tiles"


def test_the_counters_are_the_ones_the_app_exports() -> None:
    """The names and attribute keys above are the app's own (shared/telemetry/signals.py)."""
    signals = importlib.import_module("shared.telemetry.signals")
    exported = {signals.USAGE_SEARCHES, signals.USAGE_READS, signals.USAGE_FEEDBACK, signals.USAGE_DROPPED}
    assert exported == set(METRICS)
    keys = {signals.SITE, signals.VERSION, signals.KIND, signals.FEEDBACK_KIND, signals.REASON}
    assert keys == ATTRIBUTES - {"smithy.docs.outcome"} and signals.OUTCOME == "smithy.docs.outcome"


# --- main.bicep -----------------------------------------------------------------------------------------------


def test_main_deploys_the_workbook_on_the_monitoring_component_when_asked() -> None:
    document = parse(MAIN)
    (name,) = [n for n, m in document["modules"].items() if m["detail"]["path"] == "app/insights-workbook.bicep"]
    module = document["modules"][name]
    config = body(module)
    assert config["scope"] == "rg"
    assert config["name"] == "insights-workbook-${resourceToken}"
    assert config["params"] == {
        "location": "location",
        "tags": "tags",
        "applicationInsightsName": accessor("monitoring", "outputs", "applicationInsightsName"),
    }
    parameters = document["parameters"]
    assert (parameters["usageWorkbook"]["type"], parameters["usageWorkbook"]["default"]) == ("bool", True)
    condition = module["config"]["condition"]
    if "insightsEnabled" in parameters:
        # Nothing to chart unless the app counts usage (Forge__Documentation__Insights__Enabled).
        assert condition == {
            "operator": {
                "type": "and",
                "operands": {
                    "operand_1": "usageWorkbook",
                    "operand_2": {
                        "operator": {
                            "type": "equals",
                            "operands": {"operand_1": "insightsEnabled", "operand_2": "true"},
                        }
                    },
                },
            }
        }
    else:
        assert condition == "usageWorkbook"
