import { describe, expect, it } from "vitest";
import { checkPayload, positionOf } from "./payload";

describe("checkPayload", () => {
  it("accepts a JSON object", () => {
    expect(checkPayload('{"seconds": 3}')).toEqual({ ok: true, value: { seconds: 3 }, bytes: 13 });
  });

  it("treats an empty editor as the empty object", () => {
    expect(checkPayload("  \n")).toMatchObject({ ok: true, value: {} });
  });

  it.each([
    ["[1, 2]", "not an array"],
    ["42", "not a number"],
    ['"text"', "not a string"],
    ["null", "not null"],
  ])("refuses %s: it is not an object", (text, reason) => {
    const check = checkPayload(text);
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.error).toContain(reason);
  });

  it("reports where a syntax error is", () => {
    const check = checkPayload('{\n  "seconds": 3,\n  "oops"\n}');
    expect(check.ok).toBe(false);
    if (!check.ok) {
      expect(check.error).toMatch(/^Not valid JSON/);
      expect(check.line).toBe(4);
    }
  });

  it("refuses a payload over the size limit", () => {
    const check = checkPayload(JSON.stringify({ blob: "x".repeat(100) }), 64);
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.error).toMatch(/limit is 64/);
  });
});

describe("positionOf", () => {
  it("is 1-based line and column", () => {
    expect(positionOf("ab\ncd", 4)).toEqual({ line: 2, column: 2 });
    expect(positionOf("abc", 0)).toEqual({ line: 1, column: 1 });
  });
});

describe("syntax error positions", () => {
  it.each([
    ['{"a": 1,}', 1, 9],
    ['{"a" 1}', 1, 6],
    ["{'a': 1}", 1, 2],
    ['{"a": tru}', 1, 7],
    ['{"a": [1, 2}', 1, 12],
    ['{"a": 1', 1, 8],
    ['{"a": 1} x', 1, 10],
  ])("%s fails at line %i, column %i", (text, line, column) => {
    expect(checkPayload(text)).toMatchObject({ ok: false, line, column });
  });
});
