import { render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { nextCursor } from "../lib/cursor";
import { CursorPager, ShardFilter, ShardsDownNotice } from "./Shards";

const up = (alias: string, number: number) => ({ alias, number, up: true, error: null });

describe("ShardsDownNotice", () => {
  it("names each shard that did not answer, and says nothing while all answer", () => {
    const { rerender } = render(<ShardsDownNotice shards={[up("default", 0), up("shard_b", 1)]} />);
    expect(screen.queryByRole("alert")).toBeNull();
    rerender(
      <ShardsDownNotice
        shards={[up("default", 0), { alias: "shard_b", number: 1, up: false, error: "connection refused" }]}
      />,
    );
    expect(screen.getByRole("alert")).toHaveTextContent(
      "Shard shard_b is down (connection refused): its jobs are left out of these figures.",
    );
  });

  it("shows nothing without shards", () => {
    render(<ShardsDownNotice shards={undefined} />);
    expect(screen.queryByTestId("shards-down")).toBeNull();
  });
});

describe("ShardFilter", () => {
  it("offers every shard and all of them merged, and says which was picked", async () => {
    const onChange = vi.fn();
    const { rerender } = render(<ShardFilter aliases={["default", "shard_b"]} value={undefined} onChange={onChange} />);
    const select = screen.getByLabelText("Shard");
    expect([...select.querySelectorAll("option")].map((o) => o.textContent)).toEqual([
      "All shards",
      "default",
      "shard_b",
    ]);
    await userEvent.selectOptions(select, "shard_b");
    expect(onChange).toHaveBeenLastCalledWith("shard_b");
    rerender(<ShardFilter aliases={["default", "shard_b"]} value="shard_b" onChange={onChange} />);
    await userEvent.selectOptions(screen.getByLabelText("Shard"), "All shards");
    expect(onChange).toHaveBeenLastCalledWith(undefined);
  });

  it("is hidden without shards, and keeps a shard named by the address", () => {
    const { rerender } = render(<ShardFilter aliases={[]} value={undefined} onChange={() => {}} />);
    expect(screen.queryByLabelText("Shard")).toBeNull();
    rerender(<ShardFilter aliases={[]} value="shard_c" onChange={() => {}} />);
    expect(screen.getByLabelText("Shard")).toHaveValue("shard_c");
  });
});

describe("CursorPager", () => {
  it("goes forward by the list's next and back to the first page", async () => {
    const onNext = vi.fn();
    const onFirst = vi.fn();
    const { rerender } = render(
      <CursorPager count={120} shown={25} atStart hasNext onNext={onNext} onFirst={onFirst} />,
    );
    expect(screen.getByText("25 shown of 120, every shard merged")).toBeInTheDocument();
    expect(screen.getByRole("button", { name: "← First page" })).toBeDisabled();
    await userEvent.click(screen.getByRole("button", { name: "Next →" }));
    expect(onNext).toHaveBeenCalled();
    rerender(<CursorPager count={120} shown={20} atStart={false} hasNext={false} onNext={onNext} onFirst={onFirst} />);
    expect(screen.getByRole("button", { name: "Next →" })).toBeDisabled();
    await userEvent.click(screen.getByRole("button", { name: "← First page" }));
    expect(onFirst).toHaveBeenCalled();
  });

  it("reads the cursor from the list's next", () => {
    expect(nextCursor("http://testserver/api/v1/jobs/?cursor=eyJ2Ijox&page_size=7")).toBe("eyJ2Ijox");
    expect(nextCursor(null)).toBeUndefined();
  });
});
