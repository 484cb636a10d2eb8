/**
 * The stylesheet's colours, read from styles.css itself: every status badge and notice stays
 * readable (WCAG AA, 4.5:1 for its 12-14 px text) in the light theme and in the dark one.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const css = readFileSync(join(__dirname, "styles.css"), "utf8");

/** `--name: light-dark(#light, #dark)` -> { name: [light, dark] } */
function tokens(): Record<string, [string, string]> {
  const out: Record<string, [string, string]> = {};
  for (const m of css.matchAll(/--([\w-]+):\s*light-dark\((#[0-9a-f]{6}),\s*(#[0-9a-f]{6})\)/gi))
    out[m[1]] = [m[2], m[3]];
  return out;
}

function rule(selector: string): string {
  const escaped = selector.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const m = css.match(new RegExp(`(?:^|\\n)${escaped} \\{([^}]*)\\}`));
  if (!m) throw new Error(`no rule ${selector} in styles.css`);
  return m[1];
}

function declared(block: string, property: string): string {
  const m = block.match(new RegExp(`(?:^|[\\s;])${property}:\\s*var\\(--([\\w-]+)\\)`));
  if (!m) throw new Error(`no ${property}: var(--...) in ${block}`);
  return m[1];
}

function luminance(hex: string): number {
  const [r, g, b] = [1, 3, 5].map((i) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

export function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

const BADGES = [
  "queued",
  "scheduled",
  "running",
  "cancelling",
  "succeeded",
  "failed",
  "cancelled",
  "retrying",
  "waiting",
  "stale",
  "unknown",
];
const NOTICES = ["error", "success", "info", "warn"];

describe("the stylesheet's colours", () => {
  const t = tokens();

  it("computes contrast as WCAG does", () => {
    expect(contrast("#000000", "#ffffff")).toBeCloseTo(21, 5);
    expect(contrast("#777777", "#ffffff")).toBeCloseTo(4.48, 2);
  });

  it("defines every token for both themes", () => {
    expect(Object.keys(t).length).toBeGreaterThan(30);
    expect(css).toMatch(/color-scheme: light dark/);
    expect(css).toMatch(/:root\[data-theme="dark"\] \{\s*color-scheme: dark;/);
    expect(css).toMatch(/:root\[data-theme="light"\] \{\s*color-scheme: light;/);
  });

  for (const [theme, i] of [
    ["light", 0],
    ["dark", 1],
  ] as const) {
    it(`keeps every status badge readable in the ${theme} theme`, () => {
      const low: string[] = [];
      for (const badge of BADGES) {
        const block = rule(`.badge-${badge}`);
        const fg = t[declared(block, "color")][i];
        const bg = t[declared(block, "background")][i];
        const ratio = contrast(fg, bg);
        if (ratio < 4.5) low.push(`${badge}: ${fg} on ${bg} = ${ratio.toFixed(2)}`);
      }
      expect(low).toEqual([]);
    });

    it(`keeps notices and body text readable in the ${theme} theme`, () => {
      const low: string[] = [];
      for (const notice of NOTICES) {
        const block = rule(`.notice.${notice}`);
        const ratio = contrast(t[declared(block, "color")][i], t[declared(block, "background")][i]);
        if (ratio < 4.5) low.push(`notice ${notice}: ${ratio.toFixed(2)}`);
      }
      for (const [fg, bg] of [
        ["text", "panel"],
        ["muted", "panel"],
        ["muted", "bg"],
        ["faint", "panel"],
        ["faint", "bg"],
        ["faint", "panel-sunken"],
        ["faint", "accent-soft"],
        ["accent", "panel"],
        ["failed", "panel"],
        ["on-accent", "accent"],
      ]) {
        const ratio = contrast(t[fg][i], t[bg][i]);
        if (ratio < 4.5) low.push(`${fg} on ${bg}: ${ratio.toFixed(2)}`);
      }
      expect(low).toEqual([]);
    });
  }
});
