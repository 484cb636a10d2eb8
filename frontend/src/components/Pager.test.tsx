import { render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { shortSearch } from "./JobFilters";
import { Pager } from "./Pager";

describe("Pager", () => {
  it("jumps to a page typed in, and only to one that exists", async () => {
    const onPage = vi.fn();
    render(<Pager page={1} count={31_800} pageSize={25} onPage={onPage} onPageSize={() => {}} />);
    expect(screen.getByText("Page 1 of 1,272")).toBeInTheDocument();
    const box = screen.getByLabelText("Go to page (1 to 1272)");
    await userEvent.type(box, "2000");
    expect(screen.getByRole("button", { name: "Go" })).toBeDisabled();
    await userEvent.clear(box);
    await userEvent.type(box, "640{Enter}");
    expect(onPage).toHaveBeenCalledWith(640);
  });

  it("offers page sizes the API accepts", async () => {
    const onPageSize = vi.fn();
    render(<Pager page={3} count={500} pageSize={25} onPage={() => {}} onPageSize={onPageSize} />);
    await userEvent.selectOptions(screen.getByLabelText("Per page"), "100");
    expect(onPageSize).toHaveBeenCalledWith(100);
  });
});

describe("shortSearch", () => {
  it("is true for text too short to search, not for an id", () => {
    expect(shortSearch("ca")).toBe(true);
    expect(shortSearch(" c ")).toBe(true);
    expect(shortSearch("12")).toBe(false);
    expect(shortSearch("card")).toBe(false);
    expect(shortSearch("")).toBe(false);
  });
});
