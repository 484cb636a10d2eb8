import { useEffect } from "react";
import { useLocation } from "react-router";

/** A job's own page: /jobs/<id>. */
const JOB_PAGE = /^\/jobs\/\d+\/?$/;

let lastOutsideJobPages: string | null = null;

/**
 * Remembers the last address that was not a job's page (a filtered list, the failed jobs, a
 * queue), for `cameFrom`. Called once, by the layout around every page.
 */
export function useRememberWhereFrom() {
  const { pathname, search } = useLocation();
  useEffect(() => {
    if (!JOB_PAGE.test(pathname)) lastOutsideJobPages = pathname + search;
  }, [pathname, search]);
}

/** Where the operator came to the job pages from (null: straight to one, by its address). */
export const cameFrom = (): string | null => lastOutsideJobPages;
