/**
 * Debian's Chromium (/usr/bin/chromium, or $CHROMIUM_PATH) as the browser tests start it: headless,
 * without the background services whose connections this kind of machine refuses.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** The command-line flags; `headed` drops --headless (for watching a run). */
export function chromiumArgs({ headed = false } = {}) {
  return [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ].filter((a) => !(headed && a === "--headless"));
}
