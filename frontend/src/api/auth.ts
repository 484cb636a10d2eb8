import { type QueryClient, queryOptions } from "@tanstack/react-query";
import { ApiError, api } from "./client";
import type { User } from "./types";

export const authKeys = { me: ["auth", "me"] as const };

/** The logged-in user, or null when the session is anonymous (401/403 from `auth/me/`). */
export function meOptions() {
  return queryOptions({
    queryKey: authKeys.me,
    queryFn: async ({ signal }) => {
      try {
        return await api.get<User>("auth/me/", { signal });
      } catch (error) {
        if (error instanceof ApiError && (error.status === 401 || error.status === 403)) return null;
        throw error;
      }
    },
    staleTime: 60_000,
    retry: 1,
  });
}

export type Credentials = { username: string; password: string };

export const authMutations = {
  login: (queryClient: QueryClient) => ({
    mutationFn: (credentials: Credentials) => api.post<User>("auth/login/", credentials),
    onSuccess: async () => {
      // The session changed: every cached answer was someone else's view.
      queryClient.removeQueries({ predicate: (q) => q.queryKey[0] !== "auth" });
      await queryClient.invalidateQueries({ queryKey: authKeys.me });
    },
  }),
  logout: (queryClient: QueryClient) => ({
    mutationFn: () => api.post<unknown>("auth/logout/"),
    onSettled: () => {
      queryClient.clear();
      queryClient.setQueryData(authKeys.me, null);
    },
  }),
};
