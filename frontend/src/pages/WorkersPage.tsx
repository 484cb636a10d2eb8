/**
 * The workers page's route: every worker process, polled, and those lost in the last day;
 * views/WorkersView.tsx renders them.
 */
import { useQuery } from "@tanstack/react-query";
import { lostWorkersOptions, workersOptions } from "../api/workers";
import { WorkersView } from "../views/WorkersView";

export function WorkersPage() {
  const workers = useQuery(workersOptions());
  const lost = useQuery(lostWorkersOptions());
  return <WorkersView workers={workers} lost={lost} />;
}
