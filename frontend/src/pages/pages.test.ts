import { describe, expect, it } from "vitest";
import { toCreateBody } from "../views/CreateJobView";
import { hostLoginHref, safeNext } from "./LoginPage";
import { toListParams } from "../lib/useFilterParams";
import { currentProgress } from "../lib/jobView";
import type { JobDetail, JobEvent } from "../api/types";

describe("toCreateBody", () => {
  const blank = {
    type: "sleep",
    payload: '{"seconds": 3}',
    priority: "",
    max_attempts: "",
    queue: "",
    delay_seconds: "",
    timeout_seconds: "",
    idempotency_key: "",
  };

  it("leaves blank fields out so the type's defaults apply", () => {
    expect(toCreateBody(blank)).toEqual({ type: "sleep", payload: { seconds: 3 } });
  });

  it("sends numbers as numbers and trims text", () => {
    expect(
      toCreateBody({
        ...blank,
        priority: "-5",
        max_attempts: "7",
        delay_seconds: "1.5",
        timeout_seconds: "30",
        queue: " emails ",
        idempotency_key: " k1 ",
      }),
    ).toEqual({
      type: "sleep",
      payload: { seconds: 3 },
      priority: -5,
      max_attempts: 7,
      delay_seconds: 1.5,
      timeout_seconds: 30,
      queue: "emails",
      idempotency_key: "k1",
    });
  });
});

describe("safeNext", () => {
  it("only follows same-site paths after login", () => {
    expect(safeNext("/jobs/4?x=1")).toBe("/jobs/4?x=1");
    expect(safeNext("//evil.example/")).toBe("/");
    expect(safeNext("https://evil.example/")).toBe("/");
    expect(safeNext(null)).toBe("/");
  });
});

describe("hostLoginHref", () => {
  it("sends people to the host's login and back to the dashboard route they wanted", () => {
    expect(hostLoginHref("/accounts/login/", "/ops/queue/", "/jobs/4")).toBe(
      "/accounts/login/?next=%2Fops%2Fqueue%2Fjobs%2F4",
    );
    expect(hostLoginHref("https://sso.example/login?app=q", "/", "/")).toBe("https://sso.example/login?app=q&next=%2F");
  });
});

describe("toListParams", () => {
  it("turns the filter form into the API's typed parameters", () => {
    expect(
      toListParams({ status: "failed", type: "sleep", priority: "-3", search: " ", ordering: "-id" }, 2, 25),
    ).toEqual({
      status: ["failed"],
      type: "sleep",
      queue: undefined,
      priority: -3,
      search: undefined,
      ordering: "-id",
      page: 2,
      page_size: 25,
    });
  });

  it("passes a priority that is not a whole number on, for the API to refuse by name; drops page 1", () => {
    expect(toListParams({ priority: "abc" }, 1, 50)).toMatchObject({
      priority: "abc",
      page: undefined,
      page_size: 50,
    });
    expect(toListParams({ priority: " " }, 1, 50).priority).toBeUndefined();
  });

  it("sends a shard and the merged list's cursor only when given", () => {
    expect(toListParams({}, 1, 25)).not.toHaveProperty("shard");
    expect(toListParams({}, 1, 25)).not.toHaveProperty("cursor");
    expect(toListParams({ shard: "shard_b" }, 1, 25, "abc")).toMatchObject({ shard: "shard_b", cursor: "abc" });
  });
});

describe("currentProgress", () => {
  const job = {
    status: "running",
    attempts: 2,
    updated_at: "2026-01-01T00:00:02Z",
    progress: { percent: 40, message: "page 4/10" },
  } as JobDetail;
  const progress = (percent: number, at: string, attempt = 2) =>
    ({
      id: percent,
      kind: "progress",
      attempt,
      message: `at ${percent}`,
      data: { percent },
      created_at: at,
    }) as unknown as JobEvent;

  it("takes a progress event newer than the detail", () => {
    expect(currentProgress(job, [progress(50, "2026-01-01T00:00:03Z")])).toEqual({ percent: 50, message: "at 50" });
  });

  it("keeps the detail when it is newer, or the event is from an earlier attempt", () => {
    expect(currentProgress(job, [progress(30, "2026-01-01T00:00:01Z")])).toEqual({ percent: 40, message: "page 4/10" });
    expect(currentProgress(job, [progress(90, "2026-01-01T00:00:09Z", 1)])).toEqual({
      percent: 40,
      message: "page 4/10",
    });
  });

  it("uses the detail once the job stopped running", () => {
    expect(currentProgress({ ...job, status: "succeeded" }, [progress(50, "2026-01-01T00:00:03Z")]).percent).toBe(40);
  });
});
