"""What the merged console (merged.py: JOB_SHARDS set, no `?shard=`) tells about each
database: its state in a body (`shards`: the job list, the metrics) or, for the lists that
are bare arrays (queues, workers), the X-Job-Shards-Down header."""
from rest_framework import serializers

DOWN_HEADER = "X-Job-Shards-Down"


class ShardStateSerializer(serializers.Serializer):
    alias = serializers.CharField(help_text="Its DATABASES alias: JOB_DATABASE's or a shard's.")
    number = serializers.IntegerField(help_text="Its shard number (0: JOB_DATABASE).")
    up = serializers.BooleanField(help_text="It answered; false: left out of the figures.")
    error = serializers.CharField(allow_null=True, help_text="Why it did not answer.")


# For a body whose `shards` is null without JOB_SHARDS (one database): the key is left out,
# so that answer keeps the keys it had before shards. (A comment, not a docstring: the schema
# would take a docstring as the description of every body that mixes it in.)
class OmitNullShardsMixin:

    def to_representation(self, instance):
        data = super().to_representation(instance)
        if data.get("shards") is None:
            data.pop("shards", None)
        return data


class ShardCountSerializer(ShardStateSerializer):
    count = serializers.IntegerField(allow_null=True, help_text="Its jobs matching the filters.")


def with_down_header(response, answers):
    """`response` with X-Job-Shards-Down naming the databases that did not answer (comma
    separated), when any did not."""
    down = [a.alias for a in answers if not a.up]
    if down:
        response[DOWN_HEADER] = ",".join(down)
    return response
