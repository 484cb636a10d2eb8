import { fireEvent, render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { SignalForm, signalBody } from "./SignalForm";

describe("signalBody", () => {
  it("reads the data as JSON, empty as null, and refuses what is not JSON or has no name", () => {
    expect(signalBody("approved", '{"by": "ann"}')).toEqual({ name: "approved", data: { by: "ann" } });
    expect(signalBody(" approved ", "")).toEqual({ name: "approved", data: null });
    expect(signalBody("approved", "{nope")).toBe("The data is not JSON.");
    expect(signalBody(" ", "1")).toBe("Give the signal's name.");
  });
});

describe("SignalForm", () => {
  it("starts from the awaited signal's name and sends the name and the JSON data", async () => {
    const onSend = vi.fn();
    render(<SignalForm jobId={4} awaiting="approved" busy={false} error={null} onSend={onSend} onClose={() => {}} />);
    expect(screen.getByLabelText("Signal name")).toHaveValue("approved");
    fireEvent.change(screen.getByLabelText("Data (JSON)"), { target: { value: "[1, 2]" } });
    await userEvent.click(screen.getByRole("button", { name: "Send signal" }));
    expect(onSend).toHaveBeenCalledWith({ name: "approved", data: [1, 2] });
  });

  it("will not send data that is not JSON, and shows the API's refusal", async () => {
    const onSend = vi.fn();
    render(
      <SignalForm jobId={4} awaiting="approved" busy={false} error="already sent" onSend={onSend} onClose={() => {}} />,
    );
    fireEvent.change(screen.getByLabelText("Data (JSON)"), { target: { value: "{nope" } });
    expect(screen.getByText("The data is not JSON.")).toBeInTheDocument();
    expect(screen.getByRole("button", { name: "Send signal" })).toBeDisabled();
    expect(screen.getByRole("alert")).toHaveTextContent("Not sent: already sent");
  });
});
