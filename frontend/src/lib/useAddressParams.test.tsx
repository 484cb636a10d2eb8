import { act, render, screen } from "@testing-library/react";
import { useEffect } from "react";
import { MemoryRouter, useLocation } from "react-router";
import { describe, expect, it } from "vitest";
import { setOrDrop, useAddressParams } from "./useAddressParams";

type Update = (change: (next: URLSearchParams) => void) => void;
const grabbed: { update?: Update } = {};

function Probe() {
  const [, update] = useAddressParams();
  useEffect(() => {
    grabbed.update = update;
  });
  const location = useLocation();
  return <output data-testid="where">{location.search}</output>;
}

describe("useAddressParams", () => {
  it("keeps a change made before the page re-rendered with the one before it", () => {
    render(
      <MemoryRouter initialEntries={["/?type=send"]}>
        <Probe />
      </MemoryRouter>,
    );
    const stale = grabbed.update!;
    act(() => {
      // Both from the same render, as a click and a select change made at once on a busy page.
      stale((next) => setOrDrop(next, "range", "1h", "15m"));
      stale((next) => setOrDrop(next, "queue", "emails"));
    });
    const search = new URLSearchParams(screen.getByTestId("where").textContent ?? "");
    expect(Object.fromEntries(search)).toEqual({ type: "send", range: "1h", queue: "emails" });
  });

  it("drops a parameter set to its default and starts from the address once it re-rendered", () => {
    render(
      <MemoryRouter initialEntries={["/?range=1h&queue=emails"]}>
        <Probe />
      </MemoryRouter>,
    );
    act(() => grabbed.update!((next) => setOrDrop(next, "range", "15m", "15m")));
    act(() => grabbed.update!((next) => setOrDrop(next, "queue", "")));
    expect(screen.getByTestId("where").textContent).toBe("");
  });
});
