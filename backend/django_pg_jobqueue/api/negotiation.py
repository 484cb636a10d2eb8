"""Content negotiation: DRF's, with the usual answer found without parsing the Accept header.

The API renders JSON only. DRF's DefaultContentNegotiation parses the Accept header into
media types and matches each against each renderer on every request, ~5% of a POST's
Python time. Almost every client sends no Accept header, `*/*` or `application/json`, and for
those DRF's answer is always the same: the first renderer, as `application/json`. Those are
answered at once; any other header, and any `?format=` or format suffix, goes through DRF's
negotiation unchanged (so `Accept: text/html` is still a 406).
"""
from rest_framework.negotiation import DefaultContentNegotiation

from .drf_settings import api_settings

JSON = "application/json"
_ANSWERED_AT_ONCE = frozenset({None, "*/*", JSON})


class JSONFirstContentNegotiation(DefaultContentNegotiation):
    settings = api_settings  # ?format= is the query parameter, whatever the host's settings

    def select_renderer(self, request, renderers, format_suffix=None):
        if (renderers and renderers[0].media_type == JSON and not format_suffix
                and request._request.META.get("HTTP_ACCEPT") in _ANSWERED_AT_ONCE
                and self.settings.URL_FORMAT_OVERRIDE not in request.query_params):
            return renderers[0], JSON
        return super().select_renderer(request, renderers, format_suffix)
