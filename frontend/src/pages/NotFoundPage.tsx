import { Link } from "react-router";
import { Empty } from "../components/States";

export function NotFoundPage() {
  return (
    <div className="panel">
      <Empty title="Nothing here">
        <p>
          This address is not a page of the dashboard. <Link to="/">Go to the overview</Link>.
        </p>
      </Empty>
    </div>
  );
}
