/**
 * What a route hands its view about one query: its data (the last good answer, if any), whether
 * the first answer is still coming, the latest error and a way to ask again. A TanStack Query
 * result is one; a view needs no more of it, and a story or a test can write one by hand.
 */
export type Loaded<T> = {
  data: T | undefined;
  isPending: boolean;
  isError: boolean;
  error: Error | null;
  isFetching: boolean;
  refetch: () => unknown;
};

/**
 * What a view needs of a mutation its route runs: start it, and how the latest one went. A
 * TanStack Query mutation result is one.
 */
export type Mutation<V> = {
  mutate: (variables: V) => void;
  isPending: boolean;
  /** What the latest one was asked. */
  variables: V | undefined;
  error: Error | null;
};
