"""Property-based tests of the whole API from its own OpenAPI schema (schemathesis 3).

Every operation is called with generated valid and invalid input as an operator (token
auth), and every response is checked: no 5xx, a documented status code and content type,
documented headers, a body that matches the schema.

The stateful run follows the schema's links (create -> detail / events / cancel / retry;
cancel -> retry) with the same checks on every step, so that ids the API hands out are used
the way a client uses them. Budget: well under a minute together; SCHEMATHESIS_EXAMPLES and
SCHEMATHESIS_STATEFUL_EXAMPLES raise it for a longer local run.
"""
import json
import os

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck
from hypothesis import settings as hsettings
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

EXAMPLES = int(os.environ.get("SCHEMATHESIS_EXAMPLES", "25"))
STATEFUL_EXAMPLES = int(os.environ.get("SCHEMATHESIS_STATEFUL_EXAMPLES", "30"))
CHECKS = (not_a_server_error, status_code_conformance, content_type_conformance,
          response_headers_conformance, response_schema_conformance)
HEALTH = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much,
          HealthCheck.data_too_large]


def _raw_schema() -> dict:
    from django_pg_jobqueue.api.openapi import render_schema

    return json.loads(render_schema(fmt="json"))


def _with_registered_types(raw: dict, types: list[str] | None = None) -> dict:
    """Job types are registered at run time, so the published schema says `string`; here the
    generator is told the registered names (or `types`) so that creation succeeds and links
    get followed."""
    from django_pg_jobqueue.registry import registry

    props = raw["components"]["schemas"]["JobCreateRequest"]["properties"]
    props["type"]["enum"] = types or [spec.name for spec in registry.all()]
    # Likewise what the server knows and the schema cannot: the queues that exist (an API
    # user may not make one up) and the jobs that exist (`after` names them). Otherwise most
    # generated creations are refused, fewer links are followed, and whether the run reaches
    # every link depended on the draws (they differ between Python versions).
    props["queue"]["enum"] = ["default", None]
    props["after"]["maxItems"] = 0
    # The enqueue policies refuse most combinations a generator draws (a debounce with a run
    # time, an expiry not after the start, ...): left out here, they have their own tests
    # (tests/api/test_api_enqueue_policies.py), and the run reaches the links.
    for name in ("debounce", "throttle", "expires_at", "expires_in_seconds"):
        props.pop(name, None)
    return raw


def _load(raw: dict, *, bulk_links: bool = True):
    """The schema with its links. The stateful run leaves out bulk -> detail: schemathesis
    names a rule after its target and status code, so it would replace create -> detail."""
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
    if bulk_links:
        schema.add_link(source=schema["/api/v1/jobs/bulk/"]["POST"],
                        target=schema["/api/v1/jobs/{id}/"]["GET"], status_code="201",
                        parameters={"id": "$response.body#/jobs/0/id"})
    return schema


@pytest.fixture
def operator_token(operator, settings):
    settings.JOB_CREATE_RATE = "1000000/min"  # generated traffic must not hit the throttle
    # The schema's own ranges, not the operator's tighter bounds for API-created jobs.
    settings.JOB_API_MAX_PRIORITY = 100
    settings.JOB_API_MAX_DELAY_SECONDS = 366 * 86400
    settings.JOB_API_MAX_TIMEOUT_SECONDS = 30 * 86400
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


def test_linked_operations_conform_step_by_step(operator_token):
    """Create a job, then follow the links from its response (detail, events, cancel, retry;
    cancel -> retry), validating every response; each scenario starts from an empty queue."""
    from django.core.cache import cache

    from django_pg_jobqueue.models import Job

    # One type that takes any payload: the registry also holds the types earlier tests
    # registered (payload schemas, creatable or not), and which of those the derandomized draws
    # hit decided whether any creation succeeded, so whether the run reached the links at all.
    machine = _load(_with_registered_types(_raw_schema(), ["noop"]),
                    bulk_links=False).as_state_machine()
    seen: list[tuple[str, int]] = []

    class Workflow(machine):
        def setup(self):
            # Every scenario sees the same queue, so that the same draws get the same answers
            # (Hypothesis refuses a run whose steps depend on what earlier scenarios left).
            Job.objects.all().delete()
            cache.clear()

        def _add_results_to_targets(self, targets, results):
            # Hypothesis 6.1xx renamed the hook schemathesis 3.39 overrides to file a response
            # under its link's bundle (`_add_result_to_targets`); without this every response
            # lands in the catch-all bundle, no link is ever followed and the run stops with
            # "No progress can be made".
            for result in results:
                target = None if result is None else self._get_target_for_result(result)
                if target is not None:
                    super()._add_results_to_targets((target,), [result])

        def get_call_kwargs(self, case):
            return {"headers": {"Authorization": f"Token {operator_token}"}}

        def validate_response(self, response, case, additional_checks=()):
            seen.append((case.operation.verbose_name, response.status_code))
            case.validate_response(response, checks=CHECKS + tuple(additional_checks))

    Workflow.run(settings=hsettings(max_examples=STATEFUL_EXAMPLES, deadline=None,
                                    derandomize=True, stateful_step_count=6,
                                    suppress_health_check=list(HealthCheck)))
    followed = {name for name, status in seen if "{id}" in name and status < 400}
    assert {"GET /api/v1/jobs/{id}/", "GET /api/v1/jobs/{id}/events/",
            "POST /api/v1/jobs/{id}/cancel/", "POST /api/v1/jobs/{id}/retry/"} <= followed, seen


def test_the_schema_generates_without_warnings_and_validates(capsys):
    from django.core.management import call_command

    call_command("jobqueue_api_schema", "--validate", "--fail-on-warn", "--file", os.devnull)
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
