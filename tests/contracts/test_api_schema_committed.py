"""The committed OpenAPI schema (frontend/openapi.yaml, from which the UI's types are
generated) is what the API serves at /api/schema/: `make schema` after changing the API."""
from pathlib import Path

from django.core.management import call_command
from rest_framework.test import APIClient

SCHEMA = Path(__file__).resolve().parents[2] / "frontend" / "openapi.yaml"


def test_the_generated_schema_is_the_committed_one(tmp_path):
    out = tmp_path / "openapi.yaml"
    call_command("jobqueue_api_schema", "--file", str(out))
    assert out.read_text() == SCHEMA.read_text(), (
        "frontend/openapi.yaml is stale (or a docstring leaked into the schema): run "
        "`make schema`, then `npm run gen:api` in frontend/")


def test_the_served_schema_is_the_committed_one(db):
    response = APIClient().get("/api/schema/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/vnd.oai.openapi")
    assert response.content.decode() == SCHEMA.read_text()
