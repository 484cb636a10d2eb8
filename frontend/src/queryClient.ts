import { MutationCache, QueryCache, QueryClient } from "@tanstack/react-query";
import { ApiError } from "./api/client";
import { authKeys } from "./api/auth";

/**
 * Retries: only what can succeed by waiting (network down, 5xx, 429); a 4xx answer will not
 * change. A 401 anywhere means the session ended: forget the user, and the auth gate sends
 * the person to the login page.
 */
export function createQueryClient() {
  const client: QueryClient = new QueryClient({
    queryCache: new QueryCache({ onError: (error) => onAuthError(error) }),
    mutationCache: new MutationCache({ onError: (error) => onAuthError(error) }),
    defaultOptions: {
      queries: {
        retry: (failureCount, error) => {
          if (error instanceof ApiError && error.status >= 400 && error.status < 500 && error.status !== 429)
            return false;
          return failureCount < 2;
        },
        refetchOnWindowFocus: true,
      },
      mutations: { retry: false },
    },
  });
  function onAuthError(error: unknown) {
    if (error instanceof ApiError && error.status === 401) client.setQueryData(authKeys.me, null);
  }
  return client;
}
