/// <reference types="vitest/config" />
import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// `npm run dev` serves the UI on :5173 and forwards everything the backend owns to Django.
const backend = process.env.BACKEND_URL ?? "http://127.0.0.1:8000";
const proxied = ["/api", "/admin", "/static", "/metrics"];

// The build is package data of the Django app, in its static/ dir (where Django's finders and
// collectstatic look without any setting): served through Django's static files (whatever
// the host's STATIC_URL and storage), with index.html rendered by the app's view, which
// injects the runtime config (src/config.ts) and rewrites the entry URLs through static().
// Hence a relative base: chunks import each other relative to the module importing them.
export const OUT_DIR = "../backend/django_pg_jobqueue/static/django_pg_jobqueue/dashboard";

export default defineConfig({
  base: "./",
  plugins: [react()],
  server: {
    port: 5173,
    strictPort: true,
    proxy: Object.fromEntries(proxied.map((p) => [p, { target: backend, changeOrigin: false }])),
  },
  build: {
    outDir: OUT_DIR,
    emptyOutDir: true,
    rolldownOptions: {
      output: {
        // The chart library is most of the bundle and changes least: its own cacheable chunk.
        codeSplitting: {
          groups: [
            { name: "charts", test: /node_modules[\\/](recharts|d3-|victory-vendor|es-toolkit|@reduxjs|immer|reselect|redux)/ },
            { name: "vendor", test: /node_modules[\\/]/ },
          ],
        },
      },
    },
  },
  test: {
    environment: "jsdom",
    globals: true,
    setupFiles: ["./src/test/setup.ts"],
    include: ["src/**/*.test.{ts,tsx}"],
    css: false,
  },
});
