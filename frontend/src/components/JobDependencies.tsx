import { Link } from "react-router";
import type { JobDetail } from "../api/types";
import { StatusBadge } from "./StatusBadge";

type JobLink = JobDetail["dependencies"][number];

/**
 * What a job waits for (enqueued `after` those jobs) and what waits for it. Renders nothing
 * for a job that has neither, so that a plain job's page stays as it was.
 */
export function JobDependencies({ dependencies, dependants }: Pick<JobDetail, "dependencies" | "dependants">) {
  if (dependencies.length === 0 && dependants.length === 0) return null;
  return (
    <section className="panel" aria-labelledby="dependencies-title" style={{ marginBottom: 14 }}>
      <header>
        <h2 id="dependencies-title">Dependencies</h2>
      </header>
      {dependencies.length > 0 && <LinkList title="Waits for" jobs={dependencies} />}
      {dependants.length > 0 && <LinkList title="Waited for by" jobs={dependants} />}
    </section>
  );
}

const FINISHED: string[] = ["succeeded", "failed", "cancelled"];

/** ", 1 failed, 1 not finished yet": the dependencies that have not succeeded, the ones that
 * never will (failed, cancelled, gone) apart from the ones still on their way. */
export function waitsForSummary(jobs: Pick<JobLink, "status">[]): string {
  const count = (statuses: (string | null)[]) => jobs.filter((j) => statuses.includes(j.status)).length;
  const parts = [
    [count(["failed"]), "failed"],
    [count(["cancelled"]), "cancelled"],
    [count([null]), "pruned"],
    [jobs.filter((j) => j.status !== null && !FINISHED.includes(j.status)).length, "not finished yet"],
  ] as const;
  return parts
    .filter(([n]) => n > 0)
    .map(([n, what]) => `, ${n} ${what}`)
    .join("");
}

function LinkList({ title, jobs }: { title: string; jobs: JobLink[] }) {
  return (
    <div>
      <h3 className="muted" style={{ margin: "8px 0 4px", fontSize: "0.9em" }}>
        {title} ({jobs.length}
        {title === "Waits for" ? waitsForSummary(jobs) : ""})
      </h3>
      <ul aria-label={title} style={{ margin: 0, paddingLeft: 18 }}>
        {jobs.map((j) => (
          <li key={j.id}>
            <Link to={`/jobs/${j.id}`}>#{j.id}</Link> {j.type ?? <span className="muted">(pruned)</span>}{" "}
            {j.status && <StatusBadge job={{ status: j.status }} />}
            {j.on_failure === "run" && <span className="muted"> runs even if it fails</span>}
          </li>
        ))}
      </ul>
    </div>
  );
}
