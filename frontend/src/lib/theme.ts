/**
 * Light or dark. By default the page follows the system (prefers-color-scheme, through the
 * stylesheet's `color-scheme: light dark`); a choice made in the theme control is remembered
 * in localStorage and set as `data-theme` on <html>, which the stylesheet obeys.
 */
import { useSyncExternalStore } from "react";

export type ThemeChoice = "system" | "light" | "dark";
export const THEME_CHOICES: readonly { value: ThemeChoice; label: string }[] = [
  { value: "system", label: "System" },
  { value: "light", label: "Light" },
  { value: "dark", label: "Dark" },
];
export const THEME_STORAGE_KEY = "jobqueue.theme";

function stored(): ThemeChoice {
  try {
    const value = globalThis.localStorage?.getItem(THEME_STORAGE_KEY);
    return value === "light" || value === "dark" ? value : "system";
  } catch {
    return "system";
  }
}

let choice: ThemeChoice = stored();
const listeners = new Set<() => void>();

/** Put the choice on the document (`data-theme`; none for "system"). */
export function applyTheme(doc: Document = document, value: ThemeChoice = choice): void {
  if (value === "system") doc.documentElement.removeAttribute("data-theme");
  else doc.documentElement.setAttribute("data-theme", value);
}

export function getTheme(): ThemeChoice {
  return choice;
}

export function setTheme(value: ThemeChoice): void {
  choice = value;
  try {
    if (value === "system") globalThis.localStorage?.removeItem(THEME_STORAGE_KEY);
    else globalThis.localStorage?.setItem(THEME_STORAGE_KEY, value);
  } catch {
    /* not remembered, but applied */
  }
  applyTheme();
  for (const listener of [...listeners]) listener();
}

/** Tests: read the stored choice again. */
export function resetTheme(): void {
  choice = stored();
  applyTheme();
}

export function useTheme(): ThemeChoice {
  return useSyncExternalStore((listener) => {
    listeners.add(listener);
    return () => listeners.delete(listener);
  }, getTheme);
}
