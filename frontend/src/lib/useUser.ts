import { useOutletContext } from "react-router";
import type { User } from "../api/types";

/** The logged-in user (pages render inside the auth gate, which provides it). */
export const useUser = () => useOutletContext<User>();
