import { useState } from "react";
import { render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { PayloadEditor } from "./PayloadEditor";

function Harness({ initial = "{}", serverErrors = {} }: { initial?: string; serverErrors?: Record<string, string[]> }) {
  const [text, setText] = useState(initial);
  return (
    <PayloadEditor value={text} onChange={setText} serverErrors={serverErrors} example={{ seconds: 5 }} maxBytes={64} />
  );
}

describe("PayloadEditor", () => {
  it("flags invalid JSON as you type and clears it once fixed", async () => {
    const user = userEvent.setup();
    render(<Harness />);
    const editor = screen.getByTestId("payload-editor");
    await user.clear(editor);
    await user.type(editor, '{{"seconds": 3');
    expect(screen.getByTestId("payload-error")).toHaveTextContent("Not valid JSON");
    expect(editor).toHaveAttribute("aria-invalid", "true");
    await user.type(editor, "}");
    expect(screen.queryByTestId("payload-error")).not.toBeInTheDocument();
    expect(editor).toHaveAttribute("aria-invalid", "false");
    expect(screen.getByText("13 bytes of 64")).toBeInTheDocument();
  });

  it("refuses a JSON array", () => {
    render(<Harness initial="[1]" />);
    expect(screen.getByTestId("payload-error")).toHaveTextContent("must be a JSON object");
  });

  it("shows the server's errors for the payload and its keys, and only those", () => {
    render(
      <Harness
        serverErrors={{
          payload: ["must be a JSON object, not list."],
          "payload.seconds": ["must be positive."],
          priority: ["too big"],
        }}
      />,
    );
    const errors = screen.getAllByTestId("payload-server-error").map((e) => e.textContent);
    expect(errors).toEqual(["must be a JSON object, not list.", "seconds: must be positive."]);
    expect(screen.queryByText("too big")).not.toBeInTheDocument();
    expect(screen.getByTestId("payload-editor")).toHaveAttribute("aria-invalid", "true");
  });

  it("formats the JSON and fills in the type's example", async () => {
    const user = userEvent.setup();
    render(<Harness initial='{"a":1,"b":[1,2]}' />);
    await user.click(screen.getByRole("button", { name: "Format" }));
    expect(screen.getByTestId("payload-editor")).toHaveValue('{\n  "a": 1,\n  "b": [\n    1,\n    2\n  ]\n}');
    await user.click(screen.getByRole("button", { name: "Use example" }));
    expect(screen.getByTestId("payload-editor")).toHaveValue('{\n  "seconds": 5\n}');
  });

  it("refuses a payload over the size limit", () => {
    render(<Harness initial={JSON.stringify({ blob: "x".repeat(80) })} />);
    expect(screen.getByTestId("payload-error")).toHaveTextContent("the limit is 64");
  });
});
