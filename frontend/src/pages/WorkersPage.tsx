/** The workers page's route: every worker process, polled; views/WorkersView.tsx renders them. */
import { useQuery } from "@tanstack/react-query";
import { workersOptions } from "../api/workers";
import { WorkersView } from "../views/WorkersView";

export function WorkersPage() {
  const workers = useQuery(workersOptions());
  return <WorkersView workers={workers} />;
}
