"""The wake jitter (a random wait before a notified claim, so that the hosts woken by one job do
not all claim in the same instant) applies by default to the children of a supervisor only: a
lone `run_job_workers` would pay it on every pickup for no claim it saves. A number set in
JOB_WAKE_JITTER_SECONDS applies to every process."""
import pytest
from django.test import override_settings

from django_pg_jobqueue import conf
from django_pg_jobqueue.worker.pool import SUPERVISED_WAKE_JITTER_SECONDS, WorkerPool

pytestmark = pytest.mark.django_db


def test_by_default_a_supervised_child_jitters_its_notified_claims_and_a_lone_process_does_not():
    assert conf.get().WAKE_JITTER_SECONDS is None
    assert WorkerPool(threads=1).wake_jitter == 0.0
    assert WorkerPool(threads=1, supervisor_pid=1).wake_jitter == SUPERVISED_WAKE_JITTER_SECONDS


@override_settings(JOB_WAKE_JITTER_SECONDS=0.01)
def test_a_jitter_set_in_the_settings_applies_to_every_process():
    assert WorkerPool(threads=1).wake_jitter == 0.01
    assert WorkerPool(threads=1, supervisor_pid=1).wake_jitter == 0.01


@override_settings(JOB_WAKE_JITTER_SECONDS=-1)
def test_a_negative_jitter_is_refused():
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured, match="JOB_WAKE_JITTER_SECONDS"):
        conf.get()
