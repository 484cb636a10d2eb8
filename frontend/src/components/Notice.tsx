import type { Notice as NoticeText } from "../lib/jobView";

/**
 * One line saying how an action went: a status for the good news, an alert for an error. The
 * bulk outcome, a row's retry and the job page's actions all show through it; a page keeps one
 * notice at a time, so the latest replaces the earlier instead of piling up under it.
 */
export function Notice({ notice, testId }: { notice: NoticeText | null | undefined; testId?: string }) {
  if (!notice) return null;
  return (
    <div className={`notice ${notice.tone}`} role={notice.tone === "error" ? "alert" : "status"} data-testid={testId}>
      {notice.text}
    </div>
  );
}
