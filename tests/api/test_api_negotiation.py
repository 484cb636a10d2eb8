"""Content negotiation answers the usual Accept headers at once, and every other one as
DRF's own negotiation does."""
import pytest
from django.test import RequestFactory
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request

from django_pg_jobqueue.api.negotiation import JSONFirstContentNegotiation

JOBS = "/api/v1/jobs/"
RENDERERS = [JSONRenderer(), BrowsableAPIRenderer()]
ACCEPTS = [None, "*/*", "application/json", "", "text/html", "application/*",
           "application/json; indent=4", "text/html, */*;q=0.8", "application/xml",
           "application/json, text/plain", "*/*; q=0.5", "x" * 300]


def _select(negotiation, accept, query="", renderers=RENDERERS, suffix=None):
    headers = {} if accept is None else {"HTTP_ACCEPT": accept}
    request = Request(RequestFactory().get(f"/x/{query}", **headers))
    try:
        renderer, media_type = negotiation.select_renderer(request, renderers, suffix)
    except Exception as exc:  # noqa: BLE001 - the same refusal is what is compared
        return type(exc).__name__
    return type(renderer).__name__, media_type


@pytest.mark.parametrize("accept", ACCEPTS)
@pytest.mark.parametrize("query", ["", "?format=json", "?format=api", "?format=xml", "?format="])
def test_every_accept_header_gets_drfs_answer(accept, query):
    for renderers in (RENDERERS, RENDERERS[:1], RENDERERS[::-1]):
        assert (_select(JSONFirstContentNegotiation(), accept, query, renderers)
                == _select(DefaultContentNegotiation(), accept, query, renderers))


@pytest.mark.parametrize("suffix", ["json", "api", "xml"])
def test_a_format_suffix_gets_drfs_answer(suffix):
    assert (_select(JSONFirstContentNegotiation(), None, "", RENDERERS, suffix)
            == _select(DefaultContentNegotiation(), None, "", RENDERERS, suffix))


def test_the_usual_headers_are_answered_without_parsing(monkeypatch):
    def parse(*args, **kwargs):
        raise AssertionError("parsed the Accept header")

    monkeypatch.setattr(DefaultContentNegotiation, "_get_parsed_accept_list", parse)
    for accept in (None, "*/*", "application/json"):
        assert _select(JSONFirstContentNegotiation(), accept) == ("JSONRenderer", "application/json")


@pytest.mark.django_db
def test_the_api_uses_it_and_still_refuses_html(operator_client):
    assert operator_client.get(JOBS).status_code == 200
    assert operator_client.get(JOBS, HTTP_ACCEPT="application/json").status_code == 200
    response = operator_client.get(JOBS, HTTP_ACCEPT="text/html")
    assert response.status_code == 406
    assert response.json()["code"] == "not_acceptable"
