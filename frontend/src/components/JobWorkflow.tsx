import { Link } from "react-router";
import type { JobDetail } from "../api/types";

type JobLink = JobDetail["dependencies"][number];
type Centre = Pick<JobDetail, "id" | "type" | "status" | "batch">;

/** The most nodes drawn in a column; the rest are counted under it ("+ 12 more"). */
export const MAX_COLUMN_NODES = 8;

const NODE_W = 180;
const NODE_H = 44;
const GAP_Y = 12;
const COLUMN_GAP = 90;
const PAD = 8;

/** A node's box in the drawing: its left, top, and what it shows. */
export type Placed = { x: number; y: number; id: number; type: string | null; status: string | null };

/**
 * The layered layout: what the job waits for on the left, the job in the centre, what waits
 * for it on the right, each column centred on the tallest; the batch under the job. Pure, so
 * that a test reads positions without a browser.
 */
export function layout(job: Centre, dependencies: JobLink[], dependants: JobLink[]) {
  const left = dependencies.slice(0, MAX_COLUMN_NODES);
  const right = dependants.slice(0, MAX_COLUMN_NODES);
  const rows = Math.max(left.length, right.length, 1);
  const columnHeight = (n: number) => n * NODE_H + Math.max(0, n - 1) * GAP_Y;
  const tallest = columnHeight(rows);
  const x = [PAD, PAD + NODE_W + COLUMN_GAP, PAD + 2 * (NODE_W + COLUMN_GAP)];
  const column = (links: JobLink[], at: number): Placed[] => {
    const top = PAD + (tallest - columnHeight(links.length)) / 2;
    return links.map((l, i) => ({ x: at, y: top + i * (NODE_H + GAP_Y), id: l.id, type: l.type, status: l.status }));
  };
  const centre: Placed = {
    x: x[1],
    y: PAD + (tallest - NODE_H) / 2,
    id: job.id,
    type: job.type,
    status: job.status,
  };
  const moreRow = dependencies.length > left.length || dependants.length > right.length ? 22 : 0;
  const batchRow = job.batch != null ? NODE_H / 1.4 + GAP_Y : 0;
  return {
    left: column(left, x[0]),
    right: column(right, x[2]),
    centre,
    hiddenLeft: dependencies.length - left.length,
    hiddenRight: dependants.length - right.length,
    width: x[2] + NODE_W + PAD,
    height: PAD + tallest + moreRow + batchRow + PAD,
    bottom: PAD + tallest,
  };
}

/** Each status in its own colour, as its badge has it (styles.css); a pruned job muted. */
const STATUSES = ["succeeded", "failed", "cancelled", "running", "queued", "waiting"];
const colourOf = (status: string | null) => (status && STATUSES.includes(status) ? `var(--${status})` : "var(--muted)");

function Node({ node, current = false }: { node: Placed; current?: boolean }) {
  const colour = colourOf(node.status);
  const label = `#${node.id} ${node.type ?? "(pruned)"}, ${node.status ?? "pruned"}`;
  const box = (
    <g data-testid={`workflow-node-${node.id}`} data-status={node.status ?? "pruned"}>
      <title>{label}</title>
      <rect
        x={node.x}
        y={node.y}
        width={NODE_W}
        height={NODE_H}
        rx={6}
        fill="var(--panel)"
        stroke={colour}
        strokeWidth={current ? 3 : 1.5}
      />
      <text x={node.x + 10} y={node.y + 18} fontSize={13} fontWeight={current ? 700 : 500} fill="currentColor">
        #{node.id} {truncate(node.type ?? "(pruned)", 18)}
      </text>
      <circle cx={node.x + 14} cy={node.y + 31} r={4} fill={colour} />
      <text x={node.x + 24} y={node.y + 35} fontSize={12} fill="currentColor">
        {node.status ?? "pruned"}
      </text>
    </g>
  );
  if (current) return box;
  return (
    <Link to={`/jobs/${node.id}`} aria-label={label}>
      {box}
    </Link>
  );
}

function truncate(text: string, n: number): string {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

/** A curve from the right edge of `from` to the left edge of `to`: "from runs before to". */
function Edge({ from, to }: { from: Placed; to: Placed }) {
  const x1 = from.x + NODE_W;
  const y1 = from.y + NODE_H / 2;
  const x2 = to.x;
  const y2 = to.y + NODE_H / 2;
  const mid = (x1 + x2) / 2;
  return (
    <path
      d={`M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2 - 6},${y2}`}
      fill="none"
      stroke="var(--muted)"
      strokeWidth={1.5}
      markerEnd="url(#workflow-arrow)"
    />
  );
}

/**
 * A job's place in its workflow, drawn: the jobs it waits for (enqueued `after` them) on the
 * left, the job in the centre, the jobs that wait for it on the right, arrows in the order
 * they run, and its batch under it. Each node links to its job's page, the batch to its page.
 * From the job's detail (its `dependencies`, the first 100 `dependants`, `batch`); renders
 * nothing for a job with none of them.
 */
export function JobWorkflow({ job }: { job: Centre & Pick<JobDetail, "dependencies" | "dependants"> }) {
  const { dependencies, dependants } = job;
  if (dependencies.length === 0 && dependants.length === 0 && job.batch == null) return null;
  const g = layout(job, dependencies, dependants);
  return (
    <section className="panel" aria-labelledby="workflow-title" style={{ marginBottom: 14 }}>
      <header>
        <h2 id="workflow-title">Workflow</h2>
      </header>
      <div style={{ overflowX: "auto" }}>
        <svg
          role="group"
          aria-labelledby="workflow-title"
          aria-describedby="workflow-desc"
          data-testid="workflow-graph"
          width={g.width}
          height={g.height}
          viewBox={`0 0 ${g.width} ${g.height}`}
        >
          <desc id="workflow-desc">
            Job #{job.id} waits for {dependencies.length} job(s) and {dependants.length} job(s) wait for it
            {job.batch != null ? `; it is a member of batch #${job.batch}` : ""}.
          </desc>
          <defs>
            <marker
              id="workflow-arrow"
              viewBox="0 0 10 10"
              refX={9}
              refY={5}
              markerWidth={7}
              markerHeight={7}
              orient="auto"
            >
              <path d="M0,0 L10,5 L0,10 z" fill="var(--muted)" />
            </marker>
          </defs>
          {g.left.map((n) => (
            <Edge key={`l${n.id}`} from={n} to={g.centre} />
          ))}
          {g.right.map((n) => (
            <Edge key={`r${n.id}`} from={g.centre} to={n} />
          ))}
          {g.left.map((n) => (
            <Node key={n.id} node={n} />
          ))}
          <Node node={g.centre} current />
          {g.right.map((n) => (
            <Node key={n.id} node={n} />
          ))}
          {g.hiddenLeft > 0 && (
            <text x={g.left[0].x} y={g.bottom + 16} fontSize={12} fill="var(--muted)">
              + {g.hiddenLeft} more
            </text>
          )}
          {g.hiddenRight > 0 && (
            <text x={g.right[0].x} y={g.bottom + 16} fontSize={12} fill="var(--muted)">
              + {g.hiddenRight} more
            </text>
          )}
          {job.batch != null && (
            <Link to={`/batches/${job.batch}`} aria-label={`Batch #${job.batch}`}>
              <g data-testid="workflow-batch">
                <rect
                  x={g.centre.x}
                  y={g.height - PAD - NODE_H / 1.4}
                  width={NODE_W}
                  height={NODE_H / 1.4}
                  rx={6}
                  fill="var(--panel)"
                  stroke="var(--muted)"
                  strokeDasharray="4 3"
                />
                <text x={g.centre.x + 10} y={g.height - PAD - 10} fontSize={12} fill="currentColor">
                  batch #{job.batch}
                </text>
              </g>
            </Link>
          )}
        </svg>
      </div>
    </section>
  );
}
