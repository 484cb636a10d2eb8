import { afterEach, describe, expect, it } from "vitest";
import { THEME_STORAGE_KEY, getTheme, resetTheme, setTheme } from "./theme";

afterEach(() => {
  localStorage.clear();
  resetTheme();
});

describe("the theme choice", () => {
  it("follows the system by default: no data-theme, so prefers-color-scheme decides", () => {
    resetTheme();
    expect(getTheme()).toBe("system");
    expect(document.documentElement.hasAttribute("data-theme")).toBe(false);
  });

  it("sets data-theme and remembers a choice across page loads; System forgets it", () => {
    setTheme("dark");
    expect(document.documentElement.getAttribute("data-theme")).toBe("dark");
    expect(localStorage.getItem(THEME_STORAGE_KEY)).toBe("dark");
    document.documentElement.removeAttribute("data-theme");
    resetTheme(); // a new page load reads it back
    expect(getTheme()).toBe("dark");
    expect(document.documentElement.getAttribute("data-theme")).toBe("dark");
    setTheme("system");
    expect(localStorage.getItem(THEME_STORAGE_KEY)).toBeNull();
    expect(document.documentElement.hasAttribute("data-theme")).toBe(false);
  });

  it("ignores a stored value it does not know", () => {
    localStorage.setItem(THEME_STORAGE_KEY, "purple");
    resetTheme();
    expect(getTheme()).toBe("system");
  });
});
