"""The handler registry: job type names are unique across the project."""
import pytest
from django.core.exceptions import ImproperlyConfigured

from django_pg_jobqueue.registry import Registry


def first(ctx, payload):
    return {"from": "first"}


def second(ctx, payload):
    return {"from": "second"}


def test_two_handlers_under_one_name_raise_naming_both_modules():
    registry = Registry()
    registry.register("email_send", first)
    with pytest.raises(ImproperlyConfigured) as refused:
        registry.register("email_send", second)
    message = str(refused.value)
    assert "'email_send'" in message
    assert f"{__name__}.first" in message and f"{__name__}.second" in message
    assert registry.get("email_send").func is first  # the first registration stands


def test_the_same_function_registered_again_is_one_handler():
    # A module imported twice (autodiscovery, then an explicit import) registers the same
    # function again: that is not a conflict.
    registry = Registry()
    registry.register("noop", first)
    registry.register("noop", first, max_attempts=2)
    assert registry.get("noop").max_attempts == 2

