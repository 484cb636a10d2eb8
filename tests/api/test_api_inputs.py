"""Bad input never yields a 500: oversized, deep, non-finite, non-UTF-8 and non-JSON bodies."""
import json

import pytest
from django.test import override_settings

from django_pg_jobqueue.models import Job

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/jobs/"


def post_raw(client, body: bytes, content_type="application/json", path=JOBS):
    return client.generic("POST", path, body, content_type=content_type)


@pytest.mark.parametrize(("body", "message"), [
    (b'{"type": "noop", "payload": {"x": NaN}}', "NaN"),
    (b'{"type": "noop", "payload": {"x": Infinity}}', "Infinity"),
    (b'{"type": "noop", "payload": {"x": -Infinity}}', "Infinity"),
    (b'{"type": "noop", "payload": {"x": 1e400}}', "out of range"),
    (b'{"type": "noop", "payload": {"x": "\\u0000"}}', "NUL"),
    (b'{"type": "noop", "payload": {"\\u0000": 1}}', "NUL"),
    (b'{"type": "noop", "payload": {"x": "\\ud800"}}', "surrogate"),
    (b'{"type": "noop", "payload": {"x": "\xff\xfe"}}', "UTF-8"),
    (b'{"type": "noop", "payload": ', "JSON parse error"),
    (b'{"type": "noop", "payload": {"x": ' + b"1" * 5000 + b"}}", "JSON parse error"),
    (b"[" * 1000 + b"]" * 1000, "nested deeper"),
    (b'{"type": "noop", "payload": ' + b'{"a":' * 1000 + b"1" + b"}" * 1000 + b"}", "nested deeper"),
    (b'{"type": "noop", "payload": ' + b'{"a":' * 70 + b"1" + b"}" * 70 + b"}",
     "payload: nests deeper than 64 levels"),
    (b'{"type": "noop", "payload": ' + b'{"a":' * 130 + b"1" + b"}" * 130 + b"}", "nested deeper"),
])
def test_malformed_json_is_400_with_a_clear_message(operator_client, body, message):
    response = post_raw(operator_client, body)
    assert response.status_code == 400, response.content
    assert response["Content-Type"] == "application/json"
    assert message in response.json()["detail"]
    assert not Job.objects.exists()


def test_a_deep_body_is_refused_before_parsing_even_on_a_thread_with_a_small_stack():
    # Python 3.13's json.loads recurses in C as deep as the document goes: on a thread with a
    # small stack (musl's default, or a server that sets one) 100,000 levels crash the whole
    # process instead of raising. The parser tells the depth before it parses.
    import threading

    from rest_framework.exceptions import ParseError

    from django_pg_jobqueue.api.parsers import MAX_DEPTH, StrictJSONParser

    outcomes = []

    def parse(body: bytes):
        import io
        try:
            StrictJSONParser().parse(io.BytesIO(body))
            outcomes.append("parsed")
        except ParseError as exc:
            outcomes.append(str(exc.detail))

    deep = b"[" * 100_000 + b"]" * 100_000
    previous = threading.stack_size(256 * 1024)
    try:
        thread = threading.Thread(target=parse, args=(deep,))
        thread.start()
        thread.join()
    finally:
        threading.stack_size(previous)
    assert outcomes == [f"JSON nested deeper than {MAX_DEPTH} levels"]


def test_brackets_inside_strings_do_not_count_as_nesting(operator_client):
    payload = {"text": "[{" * 5000 + '\\"]' + "}]" * 5000, "list": [[["x"]]] * 100}
    response = operator_client.post(JOBS, {"type": "noop", "payload": payload}, format="json")
    assert response.status_code == 201, response.content
    assert Job.objects.get().payload == payload


def test_moderately_nested_payloads_are_fine(operator_client):
    payload = {}
    for _ in range(30):
        payload = {"a": payload}
    assert operator_client.post(JOBS, {"type": "noop", "payload": payload}, format="json").status_code == 201


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=10_000)
def test_a_body_over_the_request_limit_is_413_json(operator_client):
    body = json.dumps({"type": "noop", "payload": {"x": "y" * 20_000}}).encode()
    response = post_raw(operator_client, body)
    assert response.status_code == 413
    assert response.json()["code"] == "payload_too_large"
    bulk = json.dumps({"jobs": [{"type": "noop", "payload": {"x": "y" * 100}}] * 200}).encode()
    assert post_raw(operator_client, bulk, path=JOBS + "bulk/").status_code == 413


def test_a_huge_body_is_413_not_500(operator_client):
    body = b'{"type": "noop", "payload": {"x": "' + b"y" * (3 * 1024 * 1024) + b'"}}'
    response = post_raw(operator_client, body)
    assert response.status_code == 413


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x"])
def test_non_json_bodies_are_415(operator_client, content_type):
    response = post_raw(operator_client, b"type=noop", content_type=content_type)
    assert response.status_code == 415
    assert response.json()["code"] == "unsupported_media_type"


@pytest.mark.parametrize("body", [b"[]", b'"noop"', b"42", b"null"])
def test_a_body_that_is_not_an_object_is_400(operator_client, body):
    response = post_raw(operator_client, body)
    assert response.status_code == 400
    assert not Job.objects.exists()


def test_an_empty_body_is_400_naming_type(operator_client):
    response = post_raw(operator_client, b"")
    assert response.status_code == 400
    assert "type" in response.json()["errors"]


def test_unknown_api_paths_are_json_404(operator_client):
    for path in ("/api/v1/nope/", "/api/nope", "/api/v2/jobs/"):
        response = operator_client.get(path)
        assert response.status_code == 404
        assert response.json()["code"] == "not_found"
    assert operator_client.post("/api/v1/jobs", {"type": "noop"}, format="json").status_code == 404
    redirect = operator_client.get("/api/v1/jobs?status=queued")
    assert redirect.status_code == 301 and redirect["Location"] == "/api/v1/jobs/?status=queued"


def test_a_refusal_from_the_service_layer_is_a_400_naming_the_api_field(operator_client):
    # The serializer and the parser refuse most bad input first; what only the service's one
    # validation knows still reaches the client as a field error, never a 500.
    from unittest import mock

    from django_pg_jobqueue.exceptions import InvalidJobArgument, JobPayloadTooLarge

    with mock.patch("django_pg_jobqueue.services.enqueue_or_get",
                    side_effect=InvalidJobArgument("delay_seconds", "at most 366 days")):
        single = operator_client.post("/api/v1/jobs/", {"type": "noop"}, format="json")
    assert single.status_code == 400
    assert single.json()["errors"] == {"delay_seconds": ["at most 366 days"]}
    with mock.patch("django_pg_jobqueue.services.enqueue_many_or_get",
                    side_effect=InvalidJobArgument("timeout_seconds", "must be positive", index=1)):
        bulk = operator_client.post("/api/v1/jobs/bulk/", {"jobs": [{"type": "noop"}] * 2},
                                    format="json")
    assert bulk.status_code == 400
    assert bulk.json()["errors"] == {"jobs": {"1": {"timeout_seconds": ["must be positive"]}}}
    with mock.patch("django_pg_jobqueue.services.enqueue_or_get",
                    side_effect=JobPayloadTooLarge("payload", "70000 bytes; the limit is 65536")):
        too_big = operator_client.post("/api/v1/jobs/", {"type": "noop"}, format="json")
    assert too_big.status_code == 413


@pytest.mark.parametrize("path", [JOBS, JOBS + "bulk/"])
def test_the_api_measures_a_payload_in_utf8_bytes_as_enqueue_does(operator_client, path):
    from django_pg_jobqueue import services
    from django_pg_jobqueue.exceptions import JobPayloadTooLarge

    fits = {"s": "€" * 21_000}  # 63,008 bytes of UTF-8; 126,008 once \u-escaped
    assert services.enqueue("noop", fits).payload == fits
    too_big = {"s": "€" * 22_000}  # 66,008 bytes of UTF-8: over 65,536 both ways
    with pytest.raises(JobPayloadTooLarge) as refused:
        services.enqueue("noop", too_big)
    Job.objects.all().delete()

    def send(payload):
        item = {"type": "noop", "payload": payload}
        body = {"jobs": [item]} if path.endswith("bulk/") else item
        return post_raw(operator_client, json.dumps(body, ensure_ascii=True).encode(), path=path)

    with override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1_000_000):
        accepted = send(fits)
        assert accepted.status_code == 201, accepted.json()
        assert Job.objects.get().payload == fits
        response = send(too_big)
    assert response.status_code == 413, response.json()
    assert "66008 bytes" in response.json()["detail"]
    assert refused.value.size == 66_008
    assert Job.objects.count() == 1


# -- the API accepts exactly what enqueue() accepts ------------------------------------------
# (API field, API value, enqueue() keyword, Python value): refused by both, nothing written.
REFUSED_BY_BOTH = [
    ("queue", "a\n", "queue", "a\n"),
    ("queue", " default", "queue", " default"),
    ("type", "noop ", "type", "noop "),
    ("priority", "5", "priority", "5"),
    ("priority", 5.0, "priority", 5.0),
    ("max_attempts", "3", "max_attempts", "3"),
    ("timeout_seconds", "30", "timeout_seconds", "30"),
    ("delay_seconds", "5", "delay_seconds", "5"),
    ("run_at", "2030-01-01T09:30:00", "run_at", "naive"),
    ("run_at", "2030-01-01", "run_at", "date"),
    ("run_at", "0001-01-01T00:00:00Z", "run_at", "year 1"),
]


def _python_value(value):
    from datetime import UTC, date, datetime
    return {"naive": datetime(2030, 1, 1, 9, 30), "date": date(2030, 1, 1),
            "year 1": datetime(1, 1, 1, tzinfo=UTC)}.get(value, value)


@pytest.mark.parametrize(("field", "value", "keyword", "python"), REFUSED_BY_BOTH)
def test_the_api_refuses_what_enqueue_refuses_and_writes_nothing(
        operator_client, field, value, keyword, python):
    from django_pg_jobqueue import services
    from django_pg_jobqueue.exceptions import InvalidJobArgument

    kwargs = {"type": "noop", keyword: _python_value(python)}
    with pytest.raises(InvalidJobArgument):
        services.enqueue(**kwargs)
    body = {"type": "noop", field: value}
    for path, sent in ((JOBS, body), (JOBS + "bulk/", {"jobs": [body]})):
        response = operator_client.post(path, sent, format="json")
        assert response.status_code == 400, (path, response.json())
        errors = response.json()["errors"]
        assert field in (errors if path == JOBS else errors["jobs"]["0"]), errors
    assert not Job.objects.exists()


def test_run_at_is_refused_before_2000_and_accepted_from_it_by_both(operator_client):
    from datetime import UTC, datetime, timedelta

    from django_pg_jobqueue import services
    from django_pg_jobqueue.exceptions import InvalidJobArgument

    first = datetime(2000, 1, 1, tzinfo=UTC)
    with pytest.raises(InvalidJobArgument, match="from 2000-01-01T00:00:00Z") as caught:
        services.enqueue("noop", run_at=first - timedelta(seconds=1))
    assert caught.value.argument == "run_at"
    response = operator_client.post(JOBS, {"type": "noop", "run_at": "1999-12-31T23:59:59Z"},
                                    format="json")
    assert response.status_code == 400, response.json()
    assert "from 2000-01-01T00:00:00Z" in response.json()["errors"]["run_at"][0]
    assert not Job.objects.exists()

    assert services.enqueue("noop", run_at=first).available_at == first
    for sent in ("2000-01-01T00:00:00Z", "2000-01-01T01:00+01:00"):
        response = operator_client.post(JOBS, {"type": "noop", "run_at": sent}, format="json")
        assert response.status_code == 201, (sent, response.json())
    assert Job.objects.filter(available_at=first).count() == 3


@pytest.mark.parametrize("body", [
    b'{"type": "noop", "priority": 1, "priority": 2}',
    b'{"type": "noop", "payload": {"to": "a@example.com", "to": "b@example.com"}}',
    b'{"jobs": [{"type": "noop", "type": "sleep"}]}',
])
def test_a_repeated_json_key_is_a_400_not_the_last_one_winning(operator_client, body):
    path = JOBS + "bulk/" if body.startswith(b'{"jobs"') else JOBS
    response = post_raw(operator_client, body, path=path)
    assert response.status_code == 400, response.json()
    assert "more than once" in response.json()["detail"]
    assert not Job.objects.exists()


# -- null is "the default", from the API as from Python ---------------------------------------
# Every optional argument of enqueue() takes None as "the default" (the type's, else the
# setting's); the API takes JSON null for the same field the same way, one job or bulk.
NULL_IS_THE_DEFAULT = [
    "payload", "priority", "queue", "max_attempts", "timeout_seconds", "delay_seconds",
    "run_at", "idempotency_key", "retry_policy", "unique", "after", "after_failure",
    "concurrency_key", "concurrency_key_limit",
]
STORED = ("type", "queue", "priority", "payload", "max_attempts", "timeout_seconds", "status",
          "retry_policy", "unique_key", "unique_states", "concurrency_key", "idempotency_key")


def _stored(job_id) -> dict:
    return dict(Job.objects.filter(pk=job_id).values(*STORED).get())


def _posted(client, body, bulk: bool) -> int:
    path, sent = (JOBS + "bulk/", {"jobs": [body]}) if bulk else (JOBS, body)
    response = client.post(path, sent, format="json")
    assert response.status_code == 201, (body, response.json())
    return (response.json()["jobs"][0] if bulk else response.json())["id"]


@pytest.mark.parametrize("field", NULL_IS_THE_DEFAULT)
def test_null_is_the_default_from_the_api_as_none_is_from_python(operator_client, field):
    from django_pg_jobqueue import services

    default = _stored(services.enqueue("sleep").id)
    assert _stored(services.enqueue("sleep", **{field: None}).id) == default
    for bulk in (False, True):
        assert _stored(_posted(operator_client, {"type": "sleep", field: None}, bulk)) == default


@pytest.mark.parametrize("option", ["key", "fields", "states", "period_seconds"])
def test_a_null_unique_option_is_its_default_from_the_api_as_from_python(
        operator, operator_client, option):
    from django_pg_jobqueue import services

    python = services.enqueue("noop", {"via": "python"}, unique={option: None})
    default = services.enqueue("noop", {"via": "python-default"}, unique={})
    assert python.unique_states == default.unique_states
    assert python.unique_key.startswith("noop:payload:")
    for bulk in (False, True):
        job = _stored(_posted(operator_client, {"type": "noop", "payload": {"bulk": bulk},
                                                "unique": {option: None}}, bulk))
        assert job["unique_states"] == default.unique_states
        assert job["unique_key"].startswith(f"noop:api:{operator.pk}:payload:")


# -- payload depth: the same 64 levels alone, in bulk and from Python -----------------------

def _nested(levels: int) -> dict:
    """A payload of `levels` objects nested in one another (the innermost holds a number)."""
    payload: dict = {"leaf": 1}
    for _ in range(levels - 1):
        payload = {"a": payload}
    return payload


def test_a_payload_nests_the_same_64_levels_alone_in_bulk_and_from_python(operator_client):
    from django_pg_jobqueue import services
    from django_pg_jobqueue.api import parsers
    from django_pg_jobqueue.exceptions import InvalidJobArgument
    from django_pg_jobqueue.states import MAX_PAYLOAD_DEPTH

    # The parser leaves room for the deepest envelope, and then some: enqueue() refuses.
    assert parsers.MAX_DEPTH > MAX_PAYLOAD_DEPTH + parsers.ENVELOPE_DEPTH
    deepest, too_deep = _nested(MAX_PAYLOAD_DEPTH), _nested(MAX_PAYLOAD_DEPTH + 1)
    assert services.enqueue("noop", deepest).payload == deepest
    with pytest.raises(InvalidJobArgument, match="deeper than 64") as refused:
        services.enqueue("noop", too_deep)
    assert refused.value.argument == "payload"
    for bulk in (False, True):
        assert Job.objects.get(pk=_posted(operator_client, {"type": "noop", "payload": deepest},
                                          bulk)).payload == deepest
        body = {"type": "noop", "payload": too_deep}
        path, sent = (JOBS + "bulk/", {"jobs": [body]}) if bulk else (JOBS, body)
        response = operator_client.post(path, sent, format="json")
        assert response.status_code == 400, response.json()
        errors = response.json()["errors"]
        assert "deeper than 64" in str((errors["jobs"]["0"] if bulk else errors)["payload"])
    assert Job.objects.count() == 3


def test_the_body_parser_checks_every_key_and_value_in_the_walk_that_bounds_results():
    """One iterative walk (storable.nesting_problem) bounds a handler's result and a request
    body: it hands each object key and each value that is no container to the parser's checks,
    at any depth and in tuples too, and stops at the first container past its limit."""
    import io

    from rest_framework.exceptions import ParseError

    from django_pg_jobqueue import storable
    from django_pg_jobqueue.api.parsers import StrictJSONParser

    seen = []
    document = {"a": [1, {"b": "x"}, (2.5, None)], "c": True}
    assert storable.nesting_problem(document, 3, visit=seen.append) is None
    assert sorted(map(repr, seen)) == sorted(map(repr, ["a", "c", 1, "b", "x", 2.5, None, True]))
    assert storable.nesting_problem(document, 2) == "nests deeper than 2 levels (MAX_JSON_DEPTH)"
    for body, refusal in [(b'{"jobs": [{"payload": [{"k\\u0000": 1}]}]}', "NUL"),
                          (b'[[[{"x": [1e999]}]]]', "out of range")]:
        with pytest.raises(ParseError, match=refusal):
            StrictJSONParser().parse(io.BytesIO(body))
