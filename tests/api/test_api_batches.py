"""The batches API: a batch's progress (GET batches/{id}/), its cancel (POST
batches/{id}/cancel/), its members in the job list (?batch=) and on each job (batch); a bad
or unknown id is a 404, a user without the permission a 403, never a 500."""
import pytest

from django_pg_jobqueue import services
from django_pg_jobqueue.testing import drain
from tests.handlers import batch_handlers  # noqa: F401  (registers the handlers in this process)

pytestmark = pytest.mark.django_db

BATCHES = "/api/v1/batches/"


def make_batch(n=4, fail=()):
    return services.enqueue_batch(
        [{"type": "batch_member", "payload": {"n": i, "fail": i in fail}} for i in range(n)],
        on_complete="batch_callback", on_failure={"type": "batch_callback",
                                                  "payload": {"tag": "failure"}})


def test_a_batchs_progress_while_it_runs_and_once_it_finished(operator_client):
    batch = make_batch(4, fail={0})
    drain("batch_member", max_jobs=2)
    body = operator_client.get(f"{BATCHES}{batch.id}/").json()
    assert {k: body[k] for k in ("id", "total", "succeeded", "failed", "cancelled", "done",
                                 "running", "pending", "finished")} == {
        "id": batch.id, "total": 4, "succeeded": 1, "failed": 1, "cancelled": 0, "done": 2,
        "running": 0, "pending": 2, "finished": False}
    assert body["callbacks"] == ["on_complete", "on_failure"] and body["callback_jobs"] == {}
    drain("batch_member")
    body = operator_client.get(f"{BATCHES}{batch.id}/").json()
    assert body["finished"] is True and body["done"] == 4 and body["finished_at"]
    assert set(body["callback_jobs"]) == {"on_complete", "on_failure"}


def test_the_job_list_filters_a_batchs_members_and_each_job_names_its_batch(operator_client):
    batch = make_batch(3)
    services.enqueue("batch_member", {"n": 9})  # not a member
    body = operator_client.get(f"/api/v1/jobs/?batch={batch.id}").json()
    assert sorted(job["id"] for job in body["results"]) == sorted(j.id for j in batch.members)
    assert {job["batch"] for job in body["results"]} == {batch.id}
    assert operator_client.get("/api/v1/jobs/?batch=x").status_code == 400
    assert operator_client.get("/api/v1/jobs/?batch=0").status_code == 400


def test_cancel_cancels_the_pending_members_and_answers_the_batch(operator_client):
    batch = make_batch(3)
    response = operator_client.post(f"{BATCHES}{batch.id}/cancel/")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["cancelled"], body["pending"], body["finished"]) == (3, 0, True)
    assert body["cancelled_at"]
    assert operator_client.post(f"{BATCHES}{batch.id}/cancel/").status_code == 200  # again


@pytest.mark.parametrize("batch_id", ["12345678", "abc", "0", "-1", "99999999999999999999",
                                      "1e3", "%00"])
def test_an_unknown_or_malformed_batch_id_is_a_404(operator_client, batch_id):
    for response in (operator_client.get(f"{BATCHES}{batch_id}/"),
                     operator_client.post(f"{BATCHES}{batch_id}/cancel/")):
        assert response.status_code == 404, (batch_id, response.content)
        assert response.json()["code"] in ("batch_not_found", "not_found")


def test_permissions_reading_needs_view_job_and_cancelling_change_job(client_for, make_user):
    batch = make_batch(2)
    viewer = client_for(make_user("viewer", perms=["view_job"]))
    nobody = client_for(make_user("nobody", perms=[]))
    assert client_for(None).get(f"{BATCHES}{batch.id}/").status_code == 401
    assert nobody.get(f"{BATCHES}{batch.id}/").status_code == 403
    assert viewer.get(f"{BATCHES}{batch.id}/").status_code == 200
    assert viewer.post(f"{BATCHES}{batch.id}/cancel/").status_code == 403
    assert viewer.delete(f"{BATCHES}{batch.id}/").status_code == 405
    assert viewer.get(BATCHES).status_code == 404  # no list: batches are read by id
