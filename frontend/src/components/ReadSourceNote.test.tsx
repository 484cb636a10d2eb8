import { act, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import { noteReadSource, resetReadSource, useReadSource } from "../api/readSource";
import { ReadSourceNote } from "./ReadSourceNote";

function Probe() {
  return <ReadSourceNote source={useReadSource()} />;
}

afterEach(() => resetReadSource());

describe("where the pages were read from", () => {
  it("says nothing when the server reads no replica (no headers)", () => {
    const { container } = render(<Probe />);
    act(() => noteReadSource(new Headers({ "Content-Type": "application/json" })));
    expect(container).toBeEmptyDOMElement();
  });

  it("shows the replica's lag, and the primary with the reason once the replica is left aside", () => {
    render(<Probe />);
    act(() => noteReadSource(new Headers({ "X-Job-Read-From": "replica", "X-Job-Read-Lag": "2.345" })));
    expect(screen.getByRole("status")).toHaveTextContent("Read from a replica · 2.3 s behind");
    act(() => noteReadSource(new Headers({ "X-Job-Read-From": "replica", "X-Job-Read-Lag": "0.000" })));
    expect(screen.getByRole("status")).toHaveTextContent("Read from a replica · caught up");
    act(() =>
      noteReadSource(new Headers({ "X-Job-Read-From": "primary", "X-Job-Read-Fallback": "replica does not answer" })),
    );
    expect(screen.getByRole("status")).toHaveTextContent(
      "Replica left aside (replica does not answer): reading the primary",
    );
  });
});
