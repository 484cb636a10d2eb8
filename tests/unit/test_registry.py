"""The handler registry: job type names are unique across the project."""
import pytest
from django.core.exceptions import ImproperlyConfigured

from django_pg_jobqueue.registry import Registry, handler, registry


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



def chunk(ctxs, payloads):
    return [None] * len(ctxs)


async def async_chunk(ctxs, payloads):
    return [None] * len(ctxs)


def test_a_chunk_handler_is_registered_with_its_size_and_wait():
    registry = Registry()
    spec = registry.register("chunked", chunk, chunk_size=50, chunk_wait_seconds=1)
    assert (spec.chunk_size, spec.chunk_wait_seconds) == (50, 1.0)
    assert spec.run is chunk  # called with the chunk's lists, as it is
    assert registry.register("single", first).chunk_size is None


@pytest.mark.parametrize(("arguments", "named"), [
    ({"chunk_size": 0}, "chunk_size"),
    ({"chunk_size": 1001}, "chunk_size"),
    ({"chunk_size": 2.5}, "chunk_size"),
    ({"chunk_size": True}, "chunk_size"),
    ({"chunk_size": "50"}, "chunk_size"),
    ({"chunk_size": 10, "chunk_wait_seconds": -1}, "chunk_wait_seconds"),
    ({"chunk_size": 10, "chunk_wait_seconds": float("nan")}, "chunk_wait_seconds"),
    ({"chunk_size": 10, "chunk_wait_seconds": 61}, "chunk_wait_seconds"),
    ({"chunk_size": 10, "chunk_wait_seconds": "1"}, "chunk_wait_seconds"),
    ({"chunk_wait_seconds": 1}, "chunk_wait_seconds"),
])
def test_chunk_arguments_are_refused_at_registration_naming_the_argument(arguments, named):
    with pytest.raises(ImproperlyConfigured) as refused:
        handler("chunked_badly", **arguments)(chunk)
    assert named in str(refused.value) and "'chunked_badly'" in str(refused.value)
    assert "chunked_badly" not in registry


def test_an_async_def_cannot_be_a_chunk_handler():
    with pytest.raises(ImproperlyConfigured, match="chunk_size"):
        Registry().register("chunked_async", async_chunk, chunk_size=5)
