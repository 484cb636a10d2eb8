"""Draws at-least-once.svg: one job, two workers, a lease that runs out, and fencing.

A sequence diagram is awkward in Graphviz, so this small script (standard library only) lays
it out from the STEPS table below. `make diagrams` runs it: python3 at-least-once.py > at-least-once.svg

The story matches the engine (backend/django_pg_jobqueue/sql/): CLAIM stamps a fresh lease_token, REAP
requeues running jobs whose lease_expires_at < now(), COMPLETE_MANY matches
`status = 'running' AND lease_token = <token>`, and a refused write is recorded as a
`lease_lost` event (LEASES_LOST).
"""
from html import escape

WIDTH, TOP = 1200, 118
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
MONO = "DejaVu Sans Mono, Menlo, Consolas, monospace"

# Lifelines: key -> (x, title, subtitle, colour)
LANES = {
    "A": (150, "Worker A", "executor thread", "#2563eb"),
    "DB": (470, "PostgreSQL", "the job's row in jobs", "#16a34a"),
    "R": (690, "Reaper", "any worker process", "#6b7280"),
    "B": (860, "Worker B", "executor thread", "#7c3aed"),
}
EVENTS_X = 975  # the job_events column

# One row per step: (kind, ...). y advances by the row's height.
#   ("msg", from, to, label, sublabel, style)    an arrow; style: solid | dashed | refused
#   ("state", text, colour)                      the row's status, drawn on the DB lifeline
#   ("event", kind, detail)                      a row appended to job_events
#   ("note", lane, text, colour)                 a note on a lifeline
#   ("gap", height)
#   ("mark", name)                               remembers y, for the handler bars below
STEPS = [
    ("msg", "A", "DB", "claim: UPDATE … FOR UPDATE SKIP LOCKED", "", "solid"),
    ("mark", "a_runs"),
    ("state", "running · attempt 1 · lease_token T1 · lease_expires_at = now() + 30 s", "#d97706"),
    ("event", "claimed", "attempt 1 · worker A · T1"),
    ("gap", 8),
    ("msg", "A", "DB", "renew (T1): lease_expires_at += 30 s", "while the handler runs", "dashed"),
    ("gap", 10),
    ("mark", "a_stalls"),
    ("note", "A", "A stalls (GC pause, partition) or dies: either way, no more renewals", "#dc2626"),
    ("gap", 6),
    ("note", "DB", "no renewal arrives; lease_expires_at passes (database clock)", "#6b7280"),
    ("msg", "R", "DB", "reap: WHERE status = 'running'", "AND lease_expires_at < now()", "solid"),
    ("state", "queued · available_at = now() + backoff · no owner, no lease", "#2563eb"),
    ("event", "lease_expired", "attempt 1 · requeued"),
    ("gap", 8),
    ("msg", "B", "DB", "claim", "", "solid"),
    ("mark", "b_runs"),
    ("state", "running · attempt 2 · lease_token T2", "#d97706"),
    ("event", "claimed", "attempt 2 · worker B · T2"),
    ("gap", 8),
    ("mark", "a_wakes"),
    ("note", "A", "A wakes up; its handler (attempt 1) returns", "#2563eb"),
    ("msg", "A", "DB", "complete (T1): UPDATE … WHERE status = 'running'", "AND lease_token = T1", "solid"),
    ("msg", "DB", "A", "0 rows: the token is T2 now → LeaseLost", "result discarded, row untouched", "refused"),
    ("mark", "a_done"),
    ("event", "lease_lost", "attempt 1 · worker A · refused: complete"),
    ("gap", 8),
    ("msg", "B", "DB", "complete (T2): 1 row updated", "", "solid"),
    ("mark", "b_done"),
    ("state", "succeeded · result from attempt 2", "#16a34a"),
    ("event", "succeeded", "attempt 2 · worker B"),
]

ROW = {"msg": 46, "state": 30, "event": 0, "note": 34, "gap": None}


def text(x, y, s, *, size=12, anchor="middle", weight="normal", fill="#111827", family=FONT,
         style="normal"):
    return (f'<text x="{x}" y="{y}" font-family="{family}" font-size="{size}" '
            f'text-anchor="{anchor}" font-weight="{weight}" font-style="{style}" '
            f'fill="{fill}">{escape(s)}</text>')


def draw() -> str:
    out, y = [], TOP
    events_y = []
    marks = {}
    for step in STEPS:
        kind = step[0]
        if kind == "gap":
            y += step[1]
            continue
        if kind == "mark":
            marks[step[1]] = y
            continue
        if kind == "msg":
            _, src, dst, label, sub, style = step
            x1, x2 = LANES[src][0], LANES[dst][0]
            colour = {"refused": "#dc2626", "dashed": "#6b7280"}.get(style, "#111827")
            dash = ' stroke-dasharray="6 4"' if style in ("dashed", "refused") else ""
            ay = y + 22
            direction = 1 if x2 > x1 else -1
            out.append(f'<line x1="{x1}" y1="{ay}" x2="{x2 - direction * 8}" y2="{ay}" '
                       f'stroke="{colour}" stroke-width="1.6"{dash} marker-end="url(#arrow-{style})"/>')
            mid = (x1 + x2) / 2
            out.append(text(mid, ay - 6, label, size=11.5, fill=colour,
                            weight="bold" if style == "refused" else "normal"))
            if sub:
                out.append(text(mid, ay + 14, sub, size=10.5, fill="#4b5563"))
            y += ROW["msg"] + (6 if sub else 0)
        elif kind == "state":
            _, s, colour = step
            x = LANES["DB"][0]
            w = 7.1 * len(s) + 20
            out.append(f'<rect x="{x - w / 2}" y="{y}" width="{w}" height="22" rx="11" '
                       f'fill="white" stroke="{colour}" stroke-width="1.5"/>')
            out.append(text(x, y + 15, s, size=11, fill=colour, weight="bold"))
            y += ROW["state"]
        elif kind == "event":
            _, ev, detail = step
            events_y.append((y - ROW["state"] + 11, ev, detail))
        elif kind == "note":
            _, lane, s, colour = step
            x = LANES[lane][0]
            w = 6.6 * len(s) + 24
            left = max(12, x - 60) if lane == "A" else x - w / 2
            out.append(f'<rect x="{left}" y="{y}" width="{w}" height="24" rx="4" '
                       f'fill="#fff7ed" stroke="{colour}" stroke-width="1.2"/>')
            out.append(text(left + 12, y + 16, s, size=11, anchor="start", fill=colour,
                            style="italic"))
            y += ROW["note"]
    bottom = y + 10

    head = []
    for key, (x, title, sub, colour) in LANES.items():
        head.append(f'<rect x="{x - 78}" y="46" width="156" height="44" rx="8" fill="white" '
                    f'stroke="{colour}" stroke-width="1.8"/>')
        head.append(text(x, 66, title, size=14, weight="bold", fill=colour))
        head.append(text(x, 82, sub, size=10.5, fill="#4b5563"))
        head.append(f'<line x1="{x}" y1="90" x2="{x}" y2="{bottom}" stroke="{colour}" '
                    f'stroke-opacity="0.45" stroke-width="1.4" stroke-dasharray="3 4"/>')

    # The handlers as bars on their lifelines: A runs, stalls (hatched), wakes; B runs.
    bars = []
    for lane, y0, y1, stalled in (("A", marks["a_runs"] - 2, marks["a_stalls"], False),
                                  ("A", marks["a_stalls"], marks["a_wakes"] + 12, True),
                                  ("A", marks["a_wakes"] + 12, marks["a_done"] - 26, False),
                                  ("B", marks["b_runs"] - 2, marks["b_done"] - 24, False)):
        x, colour = LANES[lane][0], LANES[lane][3]
        fill = "url(#stalled)" if stalled else colour
        bars.append(f'<rect x="{x - 5}" y="{y0}" width="10" height="{y1 - y0}" fill="{fill}" '
                    f'fill-opacity="{1 if stalled else 0.25}" stroke="{colour}" stroke-width="1"/>')
    label_x = LANES["A"][0] - 14
    bars.append(text(label_x, (marks["a_runs"] + marks["a_stalls"]) / 2 + 4, "handler,",
                     size=10, anchor="end", fill="#2563eb"))
    bars.append(text(label_x, (marks["a_runs"] + marks["a_stalls"]) / 2 + 17, "attempt 1",
                     size=10, anchor="end", fill="#2563eb"))
    bars.append(text(LANES["B"][0] + 14, (marks["b_runs"] + marks["b_done"]) / 2 - 4,
                     "handler, attempt 2", size=10, anchor="start", fill="#7c3aed"))

    # job_events column.
    ev = [f'<rect x="{EVENTS_X - 12}" y="46" width="{WIDTH - EVENTS_X - 6}" height="44" rx="8" '
          f'fill="#f9fafb" stroke="#9ca3af" stroke-width="1.4"/>',
          text(EVENTS_X + (WIDTH - EVENTS_X - 18) / 2, 66, "job_events", size=14, weight="bold",
               family=MONO),
          text(EVENTS_X + (WIDTH - EVENTS_X - 18) / 2, 82, "appended in the same transaction",
               size=10.5, fill="#4b5563")]
    for n, (ey, kind, detail) in enumerate(events_y, start=1):
        colour = {"lease_lost": "#dc2626", "lease_expired": "#6b7280",
                  "succeeded": "#16a34a"}.get(kind, "#d97706")
        ev.append(f'<line x1="{LANES["DB"][0] + 8}" y1="{ey}" x2="{EVENTS_X - 14}" y2="{ey}" '
                  f'stroke="#d1d5db" stroke-width="1" stroke-dasharray="2 3"/>')
        ev.append(f'<rect x="{EVENTS_X - 12}" y="{ey - 15}" width="{WIDTH - EVENTS_X - 6}" '
                  f'height="34" rx="5" fill="white" stroke="{colour}" stroke-width="1.2"/>')
        ev.append(text(EVENTS_X - 2, ey, f"{n}. {kind}", size=11.5, anchor="start",
                       weight="bold", fill=colour, family=MONO))
        ev.append(text(EVENTS_X - 2, ey + 13, detail, size=9.5, anchor="start", fill="#4b5563"))

    foot_y = bottom + 26
    foot = [
        text(WIDTH / 2, foot_y, "The handler ran twice (attempts 1 and 2), but the job has one "
             "recorded outcome: attempt 2's.", size=12.5, weight="bold"),
        text(WIDTH / 2, foot_y + 20, "Delivery is at-least-once, so handlers must be idempotent: "
             "key side effects on the job id or an idempotency key.", size=12),
    ]
    height = foot_y + 40
    title = [text(WIDTH / 2, 26, "At-least-once: a lease runs out, the reaper requeues, the "
                  "stale worker is fenced out", size=16, weight="bold")]
    markers = "".join(
        f'<marker id="arrow-{name}" viewBox="0 0 10 10" refX="2" refY="5" markerWidth="8" '
        f'markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        f'fill="{colour}"/></marker>'
        for name, colour in (("solid", "#111827"), ("dashed", "#6b7280"), ("refused", "#dc2626")))
    pattern = ('<pattern id="stalled" width="6" height="6" patternUnits="userSpaceOnUse" '
               'patternTransform="rotate(45)"><rect width="6" height="6" fill="white"/>'
               '<line x1="0" y1="0" x2="0" y2="6" stroke="#dc2626" stroke-width="2"/></pattern>')
    markers += pattern
    body = "\n".join([*title, *head, *bars, *out, *ev, *foot])
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
            f'viewBox="0 0 {WIDTH} {height}">\n'
            f'<!-- Generated by assets/at-least-once.py (make diagrams); edit the script, not this file. -->\n'
            f'<defs>{markers}</defs>\n<rect width="100%" height="100%" fill="white"/>\n'
            f'{body}\n</svg>\n')


if __name__ == "__main__":
    print(draw(), end="")
