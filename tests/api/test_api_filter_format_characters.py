"""Every filter of the job list, and the same filters in a bulk action, answer a value with
%-format or str.format characters in it (`%`, `%s`, `{}`) with a 200 or a 400 naming the
filter: never a 500 (a message quoting the value must not be %-formatted)."""

import pytest

from django_pg_jobqueue import services
from django_pg_jobqueue.api.filters import JobFilter

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/jobs/"
VALUES = ["%", "%2", "%s", "%(value)s", "{}", "{0}", "a%sb", "%%%"]
FILTERS = sorted(JobFilter.base_filters)


def test_the_filters_under_test_are_every_filter_of_the_list():
    assert {"search", "status", "state", "type", "queue", "priority", "priority_min",
            "priority_max", "created_after", "created_before", "concurrency_key",
            "schedule"} <= set(FILTERS)


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("name", FILTERS)
def test_a_format_character_in_a_list_filter_is_a_200_or_a_400_naming_it(
        operator_client, name, value):
    response = operator_client.get(JOBS, {name: value})
    assert response.status_code in (200, 400), response.content[:300]
    if response.status_code == 400:
        assert list(response.json()["errors"]) == [name]


def test_a_too_short_search_quotes_the_value_as_given(operator_client):
    response = operator_client.get(JOBS, {"search": "%"})
    assert response.status_code == 400
    [message] = response.json()["errors"]["search"]
    assert "at least 3 characters" in message and "'%'" in message


def test_a_search_with_percent_signs_finds_them_literally(operator_client):
    hit = services.enqueue("noop", {"note": "50%s off"}).id
    services.enqueue("noop", {"note": "50 sales off"})
    response = operator_client.get(JOBS, {"search": "50%s"})
    assert response.status_code == 200
    assert [j["id"] for j in response.json()["results"]] == [hit]


@pytest.mark.parametrize("value", ["%", "%2", "{}"])
def test_a_format_character_in_a_bulk_action_filter_is_a_400(operator_client, value):
    response = operator_client.post("/api/v1/jobs/actions/", {
        "action": "cancel", "filter": {"search": value}}, format="json")
    assert response.status_code == 400, response.content[:300]
    assert "search" in response.json()["errors"]["filter"]
