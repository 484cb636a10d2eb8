"""Memoising per class what DRF and django-filter would otherwise rebuild per request."""


def once_per_class(obj, name: str, build):
    """`build()`'s result, made on the first call for `type(obj)` and kept on that class as
    `name` (in its own __dict__, so a subclass builds its own). Two threads may both build on
    the first call; the results are alike and the last one stays."""
    cls = type(obj)
    value = cls.__dict__.get(name)
    if value is None:
        value = build()
        setattr(cls, name, value)
    return value
