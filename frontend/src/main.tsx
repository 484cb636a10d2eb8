import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { QueryClientProvider } from "@tanstack/react-query";
import { BrowserRouter } from "react-router";
import { App } from "./App";
import { connectPolling } from "./api/polling";
import { runtimeConfig } from "./config";
import { applyTheme } from "./lib/theme";
import { createQueryClient } from "./queryClient";
import "./styles.css";

// Before the first render: the remembered theme, so the page does not flash the other one.
applyTheme();

const queryClient = createQueryClient();
// No polling while the tab is hidden or refreshing is paused; the chosen rate (api/polling.ts).
connectPolling(queryClient);

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      {/* Every route and link is relative to the prefix the host mounted the dashboard at. */}
      <BrowserRouter basename={runtimeConfig().basename}>
        <App />
      </BrowserRouter>
    </QueryClientProvider>
  </StrictMode>,
);
