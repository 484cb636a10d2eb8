/**
 * The job page's workflow graph, on jobs the run's real workers ran: a job enqueued after one
 * job and waited for by another is drawn in the centre, its dependency on the left and its
 * dependant on the right, each node with its state and a link to its page.
 */
import { type Job, expect, shot, test, waitForStatus } from "./fixtures";

test("a job's workflow graph shows its dependency and its dependant, each linking to its page", async ({
  page,
  api,
  backend,
}) => {
  const { jobs } = await api.post<{ jobs: Job[] }>("jobs/bulk/", {
    jobs: [
      { type: "noop", payload: { step: "first" }, queue: backend.queue },
      { type: "noop", payload: { step: "middle" }, queue: backend.queue, after: [{ item: 0 }] },
      { type: "noop", payload: { step: "last" }, queue: backend.queue, after: [{ item: 1 }] },
    ],
  });
  const [first, middle, last] = jobs;
  await api.waitForStatus(last.id, "succeeded");

  await page.goto(`/jobs/${middle.id}`);
  await waitForStatus(page, "succeeded");
  const graph = page.getByTestId("workflow-graph");
  await expect(graph).toBeVisible();
  await expect(graph.getByTestId(`workflow-node-${middle.id}`)).toHaveAttribute("data-status", "succeeded");
  const dependency = graph.getByRole("link", { name: `#${first.id} noop, succeeded` });
  const dependant = graph.getByRole("link", { name: `#${last.id} noop, succeeded` });
  await expect(dependency).toBeVisible();
  await expect(dependant).toBeVisible();
  // Laid out in the order they run: the dependency left of the job, the dependant right of it.
  const x = async (testId: string) => (await graph.getByTestId(testId).boundingBox())!.x;
  const [left, centre, right] = await Promise.all([
    x(`workflow-node-${first.id}`),
    x(`workflow-node-${middle.id}`),
    x(`workflow-node-${last.id}`),
  ]);
  expect(left).toBeLessThan(centre);
  expect(centre).toBeLessThan(right);
  await graph.scrollIntoViewIfNeeded();
  await shot(page, "job-workflow-light-1440", { fullPage: false });

  await dependant.click();
  await page.waitForURL(new RegExp(`/jobs/${last.id}$`));
  await expect(
    page.getByTestId("workflow-graph").getByRole("link", { name: `#${middle.id} noop, succeeded` }),
  ).toBeVisible();
});
