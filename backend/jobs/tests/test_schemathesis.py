"""Property-based tests of the whole API from its own OpenAPI schema (schemathesis 3).

Every operation is called with generated valid and invalid input as an operator (token
auth), and every response is checked: no 5xx, a documented status code and content type,
documented headers, a body that matches the schema. The loaded schema carries links
(create -> detail / cancel / retry / events; cancel -> retry) for a stateful run; see the
report of issue 3 for why that run is not enabled yet (schemathesis 3.39's state machine
stops with InvalidDefinition once a 4xx lands in its catch-all bundle). Budget: well under a
minute; SCHEMATHESIS_EXAMPLES raises it for a longer local run.
"""
import json
import os

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from hypothesis import HealthCheck
from hypothesis import settings as hsettings
from rest_framework.authtoken.models import Token
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.checks import not_a_server_error

EXAMPLES = int(os.environ.get("SCHEMATHESIS_EXAMPLES", "25"))
CHECKS = (not_a_server_error, status_code_conformance, content_type_conformance,
          response_headers_conformance, response_schema_conformance)
HEALTH = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much,
          HealthCheck.data_too_large]


def _raw_schema() -> dict:
    generated = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(generated, renderer_context={}))


def _with_registered_types(raw: dict) -> dict:
    """Job types are registered at run time, so the published schema says `string`; here the
    generator is told the registered names so that creation succeeds and links get followed."""
    from jobs.registry import registry

    prop = raw["components"]["schemas"]["JobCreateRequest"]["properties"]["type"]
    prop["enum"] = [spec.name for spec in registry.all()]
    return raw


def _load(raw: dict):
    from config.wsgi import application

    schema = schemathesis.from_dict(raw, app=application)
    create = schema["/api/v1/jobs/"]["POST"]
    by_id = {"id": "$response.body#/id"}
    for target in ("/api/v1/jobs/{id}/", "/api/v1/jobs/{id}/events/"):
        schema.add_link(source=create, target=schema[target]["GET"], status_code="201", parameters=by_id)
    for target in ("/api/v1/jobs/{id}/cancel/", "/api/v1/jobs/{id}/retry/"):
        schema.add_link(source=create, target=schema[target]["POST"], status_code="201", parameters=by_id)
    schema.add_link(source=schema["/api/v1/jobs/{id}/cancel/"]["POST"],
                    target=schema["/api/v1/jobs/{id}/retry/"]["POST"], status_code="200",
                    parameters=by_id)
    schema.add_link(source=schema["/api/v1/jobs/bulk/"]["POST"],
                    target=schema["/api/v1/jobs/{id}/"]["GET"], status_code="201",
                    parameters={"id": "$response.body#/jobs/0/id"})
    return schema


@pytest.fixture
def operator_token(operator, settings):
    settings.JOB_CREATE_RATE = "1000000/min"  # generated traffic must not hit the throttle
    # Calls go straight to the WSGI handler, whose request signals would close the test's
    # connection mid-transaction; Django's own test client detaches them the same way.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield Token.objects.create(user=operator).key
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def api_schema(db):
    return _load(_with_registered_types(_raw_schema()))


schema = schemathesis.from_pytest_fixture("api_schema")


@schema.parametrize()
@hsettings(max_examples=EXAMPLES, deadline=None, suppress_health_check=HEALTH, derandomize=True)
def test_every_operation_conforms_to_the_schema(case, operator_token):
    response = case.call(headers={"Authorization": f"Token {operator_token}"})
    case.validate_response(response, checks=CHECKS)


def test_the_schema_generates_without_warnings_and_validates(capsys):
    from django.core.management import call_command

    call_command("spectacular", "--validate", "--fail-on-warn", "--file", os.devnull)
    raw = _raw_schema()
    create = raw["paths"]["/api/v1/jobs/"]["post"]
    assert create["responses"]["200"]["headers"]["X-Idempotency-Replay"]["required"] is True
    assert {"201", "200", "400", "401", "403", "409", "413", "429", "503"} <= set(create["responses"])
    assert "Retry-After" in create["responses"]["429"]["headers"]
    for path, operations in raw["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if status.startswith(("4", "5")) and path != "/api/health/":
                    schema_ref = response["content"]["application/json"]["schema"]["$ref"]
                    assert schema_ref.endswith("/Error"), (path, method, status)
