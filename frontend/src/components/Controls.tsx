import { REFRESH_CHOICES, setRefreshSettings, useRefreshSettings } from "../api/polling";
import { THEME_CHOICES, type ThemeChoice, setTheme, useTheme } from "../lib/theme";

/** How often every page refreshes, and a pause for all of them (remembered in this browser). */
export function RefreshControl() {
  const { everyMs, paused } = useRefreshSettings();
  return (
    <div className="control" role="group" aria-label="Refresh settings">
      <label htmlFor="refresh-every">Refresh</label>
      <select
        id="refresh-every"
        title="How often every page refreshes (Auto: each page's own rate, 1 to 5 s)"
        value={everyMs === null ? "auto" : String(everyMs)}
        onChange={(e) => setRefreshSettings({ everyMs: e.target.value === "auto" ? null : Number(e.target.value) })}
      >
        {REFRESH_CHOICES.map((c) => (
          <option key={c.label} value={c.everyMs === null ? "auto" : String(c.everyMs)}>
            {c.label}
          </option>
        ))}
      </select>
      <button
        type="button"
        className="small"
        aria-pressed={paused}
        onClick={() => setRefreshSettings({ paused: !paused })}
        title={paused ? "Start refreshing again" : "Stop refreshing every page until resumed"}
      >
        {paused ? "Resume" : "Pause"}
      </button>
    </div>
  );
}

export function ThemeControl() {
  const theme = useTheme();
  return (
    <div className="control">
      <label htmlFor="theme-choice">Theme</label>
      <select id="theme-choice" value={theme} onChange={(e) => setTheme(e.target.value as ThemeChoice)}>
        {THEME_CHOICES.map((c) => (
          <option key={c.value} value={c.value}>
            {c.label}
          </option>
        ))}
      </select>
    </div>
  );
}
