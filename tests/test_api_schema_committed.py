"""The committed OpenAPI schema (frontend/openapi.yaml, from which the UI's types are
generated) is what the backend generates: `make schema` after changing the API."""
from pathlib import Path

from django.core.management import call_command

SCHEMA = Path(__file__).resolve().parents[1] / "frontend" / "openapi.yaml"


def test_the_generated_schema_is_the_committed_one(tmp_path):
    out = tmp_path / "openapi.yaml"
    call_command("spectacular", "--file", str(out))
    assert out.read_text() == SCHEMA.read_text(), (
        "frontend/openapi.yaml is stale (or a docstring leaked into the schema): run "
        "`make schema`, then `npm run gen:api` in frontend/")
