"""SharedFieldsMixin: a serializer's fields built once per class, and rows of its model
rendered through a plan built once from them (the job list's and the job's hot path)."""
import datetime as dt

from django.conf import settings
from django.utils import timezone
from rest_framework import ISO_8601, serializers
from rest_framework.utils.serializer_helpers import BindingDict

from .fields import ISODateTimeField
from .per_class import once_per_class

# How a row's field is rendered by SharedFieldsMixin's plan (DRF's own result, faster).
_AS_STR, _AS_INT, _AS_IS, _AS_DATETIME, _BY_FIELD = range(5)


def _plan_kind(field) -> int:
    kind = type(field)
    if kind is serializers.CharField:
        return _AS_STR  # CharField.to_representation: str(value)
    if kind is serializers.IntegerField:
        return _AS_INT  # int(value)
    if (isinstance(field, serializers.JSONField) and not field.binary
            and kind.to_representation is serializers.JSONField.to_representation):
        return _AS_IS  # the value itself
    if kind is ISODateTimeField and field.format == ISO_8601 and not hasattr(field, "timezone"):
        return _AS_DATETIME  # ISO 8601 in the current time zone
    return _BY_FIELD


# Builds the fields once per class and shares them between instances; a ModelSerializer
# also renders rows of its model through a plan built once from those fields.
#
# DRF builds a serializer's fields anew for every instance (deep copies of the declared
# fields, and a ModelSerializer's from the model): for JobSerializer's 25 fields that was
# the largest share of a POST's Python time. The fields of one prototype instance serve
# every instance instead. Fields hold no per-request state (values pass through
# `to_representation` and `run_validation`; `validate_<field>` is looked up on the
# serializer in use), but `field.parent`, `root` and `context` are the prototype's, so
# `get_<field>` methods run on the prototype (of the same class): neither they nor any
# field of such a serializer may read the instance's state, the request or the context.
# The first use builds them (two threads may both build; the results are alike).
# test_api_shared_fields checks the output against DRF's per-instance fields.
#
# Rendering: DRF's `to_representation` asks each field for its attribute and its value
# (~1.5 us a field, and each datetime looks up the current time zone): a third of a
# list page's Python time. For an instance of `Meta.model` the plan reads each model
# field's attribute directly, renders text, integers, JSON and ISO 8601 datetimes inline
# (the time zone looked up once a row) exactly as those DRF fields do, and leaves every
# other field (choices, UUIDs, nested serializers, methods) to the field itself.
# Anything else, and datetimes other than aware ones, go DRF's way.
# test_api_shared_fields compares the output with DRF's own to_representation.
#
# A comment, not a docstring: drf-spectacular describes a serializer by the first docstring
# of its classes, and would publish this one in the OpenAPI schema.
class SharedFieldsMixin:

    @property
    def fields(self):
        return once_per_class(self, "_shared_fields", self._build_fields)

    def _build_fields(self):
        prototype = type(self)()
        fields = BindingDict(prototype)
        for name, field in prototype.get_fields().items():
            fields[name] = field
        return fields

    def _representation_plan(self):
        return once_per_class(self, "_shared_plan", self._build_plan)

    def _build_plan(self):
        attnames = {f.attname for f in self.Meta.model._meta.concrete_fields}
        plan = []
        for field in self._readable_fields:
            attrs = field.source_attrs
            attr = attrs[0] if len(attrs) == 1 and attrs[0] in attnames else None
            if attr is None and attrs:  # a dotted source or a property: DRF's way
                plan.append((field.field_name, None, _BY_FIELD, field, False))
            else:
                kind = _plan_kind(field) if attr else _BY_FIELD
                plan.append((field.field_name, attr, kind, field, True))
        return plan

    def to_representation(self, instance):
        model = getattr(getattr(self, "Meta", None), "model", None)
        if model is None or type(instance) is not model:
            return super().to_representation(instance)
        iso = settings.USE_TZ
        tz = timezone.get_current_timezone() if iso else None
        ret = {}
        for name, attr, kind, field, direct in self._representation_plan():
            if not direct:
                try:
                    value = field.get_attribute(instance)
                except serializers.SkipField:
                    continue
            else:
                value = instance if attr is None else getattr(instance, attr)
            if value is None:
                ret[name] = None
            elif kind is _AS_STR:
                ret[name] = str(value)
            elif kind is _AS_INT:
                ret[name] = int(value)
            elif kind is _AS_IS:
                ret[name] = value
            elif kind is _AS_DATETIME and iso and isinstance(value, dt.datetime) \
                    and value.utcoffset() is not None:
                try:
                    text = value.astimezone(tz).isoformat()
                except OverflowError:
                    ret[name] = field.to_representation(value)  # DRF's error
                    continue
                ret[name] = text[:-6] + "Z" if text.endswith("+00:00") else text
            else:
                ret[name] = field.to_representation(value)
        return ret
