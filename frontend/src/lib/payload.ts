/** Client-side checks of the JSON payload editor, before the server has its say. */
export type PayloadCheck =
  | { ok: true; value: Record<string, unknown>; bytes: number }
  | { ok: false; error: string; line?: number; column?: number };

export function byteLength(text: string): number {
  return new TextEncoder().encode(text).length;
}

/** Line and column (1-based) of a character offset. */
export function positionOf(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const lines = before.split("\n");
  return { line: lines.length, column: lines[lines.length - 1].length + 1 };
}

/**
 * The offset of the first syntax error in `text`. Browsers word JSON.parse errors differently
 * and some give no position at all, so the editor finds it itself with a small scanner.
 */
export function syntaxErrorOffset(text: string): number | null {
  let i = 0;
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i])) i++;
  };
  const fail = (): never => {
    throw i;
  };
  const literal = (word: string) => {
    if (text.startsWith(word, i)) i += word.length;
    else fail();
  };
  const string = () => {
    i++; // opening quote
    while (i < text.length) {
      const c = text[i];
      if (c === '"') {
        i++;
        return;
      }
      if (c === "\\") {
        i++;
        if (text[i] === "u") {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 1, i + 5))) fail();
          i += 5;
        } else if (i < text.length && '"\\/bfnrt'.includes(text[i])) i++;
        else fail();
      } else if (c < " ") fail();
      else i++;
    }
    fail();
  };
  const number = () => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i));
    if (!m) fail();
    i += m![0].length;
  };
  const value = (): void => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      ws();
      if (text[i] === "}") {
        i++;
        return;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail();
        string();
        ws();
        if (text[i] !== ":") fail();
        i++;
        value();
        ws();
        if (text[i] === ",") i++;
        else if (text[i] === "}") {
          i++;
          return;
        } else fail();
      }
    } else if (c === "[") {
      i++;
      ws();
      if (text[i] === "]") {
        i++;
        return;
      }
      for (;;) {
        value();
        ws();
        if (text[i] === ",") i++;
        else if (text[i] === "]") {
          i++;
          return;
        } else fail();
      }
    } else if (c === '"') string();
    else if (c === "t") literal("true");
    else if (c === "f") literal("false");
    else if (c === "n") literal("null");
    else if (c === "-" || (c >= "0" && c <= "9")) number();
    else fail();
  };
  try {
    value();
    ws();
    return i < text.length ? i : null;
  } catch (offset) {
    return Math.min(offset as number, text.length);
  }
}

export function checkPayload(text: string, maxBytes?: number): PayloadCheck {
  const trimmed = text.trim();
  if (trimmed === "") return { ok: true, value: {}, bytes: 2 };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    const offset = syntaxErrorOffset(text);
    if (offset === null) return { ok: false, error: `Not valid JSON: ${(e as Error).message}` };
    const where = positionOf(text, offset);
    const found = offset >= text.length ? "the text ends too early" : `unexpected ${JSON.stringify(text[offset])}`;
    return { ok: false, error: `Not valid JSON: ${found} at line ${where.line}, column ${where.column}.`, ...where };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    const kind = value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`;
    return { ok: false, error: `The payload must be a JSON object ({...}), not ${kind}.` };
  }
  const bytes = byteLength(JSON.stringify(value));
  if (maxBytes !== undefined && bytes > maxBytes) {
    return {
      ok: false,
      error: `The payload is ${bytes.toLocaleString()} bytes; the limit is ${maxBytes.toLocaleString()}.`,
    };
  }
  return { ok: true, value: value as Record<string, unknown>, bytes };
}
