from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination


class JobPagination(PageNumberPagination):
    """`?page=` and `?page_size=` (1..100, default 25); the body has count, next, previous,
    results. A page past the end is a 404. A page size that is not a whole number from 1 to
    100 is a 400 naming `page_size` (DRF would silently use the default, or clamp to 100);
    a blank one is the default."""

    page_size = 25
    page_size_query_param = "page_size"
    max_page_size = 100

    def get_page_size(self, request):
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None or not raw.strip():
            return self.page_size
        try:
            size = int(raw.strip())
        except ValueError:
            size = None
        if size is None or not 1 <= size <= self.max_page_size:
            raise ValidationError({self.page_size_query_param: [
                f"must be a whole number from 1 to {self.max_page_size}; got {raw[:40]!r}."]})
        return size


class MergedJobPagination(JobPagination):
    """The job list's: JobPagination, whose answer with JOB_SHARDS and no `?shard=` (the
    merged list, api/jobs/views.py) also has `shards`; its schema says so."""

    def get_paginated_response_schema(self, schema):
        answer = super().get_paginated_response_schema(schema)
        answer["properties"]["shards"] = {
            "type": "array",
            "description": "With JOB_SHARDS and no `shard` only: each database (JOB_DATABASE "
                           "and every shard), whether it answered (`up`, else `error`), and "
                           "its count of the matching jobs (null when down).",
            "items": {"type": "object", "required": ["alias", "number", "up", "error", "count"],
                      "properties": {"alias": {"type": "string"},
                                     "number": {"type": "integer"},
                                     "up": {"type": "boolean"},
                                     "error": {"type": "string", "nullable": True},
                                     "count": {"type": "integer", "nullable": True}}}}
        return answer
