"""/api/v1/rate-limits/: the rate limits in force, set one, remove one; their shapes beside
them. Writes go through `django_pg_jobqueue.services` (set_rate_limit, remove_rate_limit), as
the admin's do."""
from drf_spectacular.utils import OpenApiExample, OpenApiResponse
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.response import Response

from .. import conf, merged, selectors, services
from ..states import MAX_CONCURRENCY_KEY_LENGTH, RATE_LIMIT_KINDS
from .base import JobQueueViewSet
from .fields import StrictSerializer
from .permissions import CHANGE_QUEUE, VIEW, JobPermission
from .schema import errors, extend_schema
from .shards import with_down_header


class RateKeyUseSerializer(serializers.Serializer):
    key = serializers.CharField()
    used = serializers.IntegerField(help_text="The weight started in the key's window now.")


class RateLimitSerializer(serializers.Serializer):
    """A rate limit in force: at most `max_starts` starts in any sliding `period_seconds`."""

    kind = serializers.ChoiceField(choices=RATE_LIMIT_KINDS, help_text=(
        "What it limits: a queue, a job type, or the jobs of a concurrency key."))
    name = serializers.CharField(help_text="The queue's or type's name, or the key (a prefix "
                                           "ending in `*` gives each key it matches a window "
                                           "of its own).")
    max_starts = serializers.IntegerField(help_text="Most starts (weights summed) per period.")
    period_seconds = serializers.FloatField()
    source = serializers.ChoiceField(choices=["set", "declared"], help_text=(
        "`set` at run time (this API, the admin, set_rate_limit) or `declared` by "
        "JOB_RATE_LIMITS."))
    used = serializers.IntegerField(required=False, help_text=(
        "The weight started in the sliding window ending now (for a key prefix, its busiest "
        "key's); `max_starts - used` more may start now. In the list only."))
    keys = RateKeyUseSerializer(many=True, required=False, help_text=(
        "A key limit's busiest keys now (up to 10), each with its window's use. In the list only."))
    keys_in_window = serializers.IntegerField(required=False, help_text=(
        "A key limit: how many keys have starts in their windows now. In the list only."))
    shard = serializers.CharField(required=False, help_text=(
        "With JOB_SHARDS, in the list only: the alias of the database it is in force in "
        "(JOB_DATABASE's or a shard's), which counts its own window: a queue's limit is "
        "listed in the queue's database, a type's or a key's in each database."))


def _scope_field(what: str):
    return serializers.CharField(required=False, max_length=MAX_CONCURRENCY_KEY_LENGTH,
                                 help_text=f"{what} (name exactly one of queue, type, key).")


class RateLimitSetSerializer(StrictSerializer):
    queue = _scope_field("A queue: every job of it")
    type = _scope_field("A job type (or a Django task's path)")
    key = _scope_field("A concurrency key, or a prefix ending in `*`")
    max_starts = serializers.IntegerField(help_text="Most starts (weights summed) per period.")
    period_seconds = serializers.FloatField(help_text="The sliding period, at most a day.")


class RateLimitScopeSerializer(StrictSerializer):
    queue = _scope_field("The queue")
    type = _scope_field("The job type")
    key = _scope_field("The key or prefix")


class RateLimitRemovedSerializer(serializers.Serializer):
    removed = serializers.BooleanField(help_text="Whether a limit set at run time was removed.")


_EXAMPLE = {"kind": "type", "name": "email_send", "max_starts": 20, "period_seconds": 1.0,
            "source": "set"}
_LISTED = {**_EXAMPLE, "used": 12}


class RateLimitViewSet(JobQueueViewSet):
    """Rate limits: list those in force, set one, remove one."""

    permission_classes = [JobPermission]
    job_permissions = {"list": VIEW, "create": CHANGE_QUEUE, "remove": CHANGE_QUEUE}

    @extend_schema(
        summary="The rate limits in force", tags=["rate limits"],
        description="Each limit: at most `max_starts` jobs (their weights summed, "
                    "JOB_RATE_WEIGHTS) start in any sliding `period_seconds`, across every "
                    "worker, enforced inside the claim. Those set at run time replace those "
                    "JOB_RATE_LIMITS declares for the same scope. Their use: GET /metrics. "
                    "With JOB_SHARDS, each database's limits with their use there, each "
                    "naming its `shard`; the X-Job-Shards-Down header names any database "
                    "that did not answer.",
        responses={200: OpenApiResponse(RateLimitSerializer(many=True), examples=[
            OpenApiExample("limits", response_only=True, value=[
                _LISTED, {"kind": "key", "name": "customer:*", "max_starts": 2,
                          "period_seconds": 1.0, "source": "declared", "used": 2,
                          "keys": [{"key": "customer:42", "used": 2},
                                   {"key": "customer:7", "used": 1}],
                          "keys_in_window": 2}])]),
            **errors(401, 403, 503)},
    )
    def list(self, request):
        if conf.get().SHARDS:
            rows, answers = merged.rate_limits()
            return with_down_header(Response(RateLimitSerializer(rows, many=True).data), answers)
        return Response(RateLimitSerializer(selectors.rate_limits(), many=True).data)

    @extend_schema(
        summary="Set a rate limit", tags=["rate limits"],
        description="At most `max_starts` jobs of the queue, of the type, or with the "
                    "concurrency key start in any sliding `period_seconds`; replaces that "
                    "scope's limit. Workers see it within a second. Name exactly one of "
                    "queue, type, key; a queue must exist (404 otherwise). Needs "
                    "change_queuesetting, as a queue's concurrency limit does. With "
                    "JOB_SHARDS, a queue's limit is set in the queue's database, a type's or "
                    "a key's in each database (each counts its own window).",
        request=RateLimitSetSerializer,
        examples=[OpenApiExample("a type", request_only=True,
                                 value={"type": "email_send", "max_starts": 20,
                                        "period_seconds": 1}),
                  OpenApiExample("every customer", request_only=True,
                                 value={"key": "customer:*", "max_starts": 2,
                                        "period_seconds": 1})],
        responses={200: OpenApiResponse(RateLimitSerializer, description="The limit, as set.",
                                        examples=[OpenApiExample("limit", response_only=True,
                                                                 value=_EXAMPLE)]),
                   **errors(400, 401, 403, 404, 503)},
    )
    def create(self, request):
        serializer = RateLimitSetSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        limit = services.set_rate_limit(**serializer.validated_data,
                                        actor=request.user.get_username())
        return Response(RateLimitSerializer({
            "kind": limit.kind, "name": limit.name, "max_starts": limit.max_starts,
            "period_seconds": limit.period_seconds, "source": "set"}).data)

    @extend_schema(
        summary="Remove a rate limit set at run time", tags=["rate limits"],
        description="The limit JOB_RATE_LIMITS declares for that scope, if any, holds again. "
                    "Name exactly one of queue, type, key. With JOB_SHARDS, removed from "
                    "each database it was set in.",
        request=RateLimitScopeSerializer,
        responses={200: RateLimitRemovedSerializer, **errors(400, 401, 403, 503)},
    )
    @action(detail=False, methods=["post"])
    def remove(self, request):
        serializer = RateLimitScopeSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        removed = services.remove_rate_limit(**serializer.validated_data,
                                             actor=request.user.get_username())
        return Response(RateLimitRemovedSerializer({"removed": removed}).data)
