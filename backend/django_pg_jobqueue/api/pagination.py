from rest_framework.pagination import PageNumberPagination


class JobPagination(PageNumberPagination):
    """`?page=` and `?page_size=` (1..100, default 25); the body has count, next, previous,
    results. A page past the end is a 404."""

    page_size = 25
    page_size_query_param = "page_size"
    max_page_size = 100
