"""The app's own pages (the API docs and the dashboard) send a Content-Security-Policy that
allows scripts from the site only: no inline script, no CDN, no eval.
The host's other pages are left alone. The pages really work under it: Chromium loads each,
renders it, and reports no violation."""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.test import Client, override_settings

from django_pg_jobqueue.dashboard.views import BUILD_DIR

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
FRONTEND = REPO / "frontend"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
PAGES = {"swagger": "/api/docs/", "redoc": "/api/docs/redoc/", "dashboard": "/"}
needs_build = pytest.mark.skipif(not (BUILD_DIR / "index.html").is_file(),
                                 reason="the dashboard is not built (make ui)")


def _policy(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    directives = {}
    for part in header.split(";"):
        name, *values = part.split()
        directives[name] = values
    return directives


@pytest.mark.parametrize("page", ["swagger", "redoc", pytest.param("dashboard", marks=needs_build)])
def test_the_apps_pages_allow_scripts_from_the_site_only(page):
    response = Client().get(PAGES[page])
    assert response.status_code == 200
    policy = _policy(response)
    assert policy["script-src"] == ["'self'"]
    assert policy["object-src"] == ["'none'"]
    assert policy["base-uri"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'self'"]
    assert "'unsafe-inline'" not in policy["default-src"]
    # And the page itself has no script a 'self' policy would refuse: each <script> has a src,
    # or is the dashboard's JSON island (data, which CSP does not block).
    html = response.content.decode()
    for tag in re.findall(r"<script\b[^>]*>", html):
        assert "src=" in tag or 'type="application/json"' in tag, tag
    assert "on" + "load=" not in html and "javascript:" not in html


def test_the_hosts_other_pages_get_no_policy_from_the_app(operator_client):
    assert "Content-Security-Policy" not in Client().get("/admin/login/")
    assert "Content-Security-Policy" not in operator_client.get("/api/v1/jobs/")
    assert "Content-Security-Policy" not in Client().get("/api/schema/")


@override_settings(STATIC_URL="https://cdn.example.com/static/")
def test_static_files_on_another_origin_are_allowed_by_origin():
    policy = _policy(Client().get(PAGES["swagger"]))
    assert policy["script-src"] == ["'self'", "https://cdn.example.com"]
    assert "https://cdn.example.com" in policy["style-src"]


def test_a_host_policy_already_on_the_response_is_kept():
    from django.http import HttpResponse

    from django_pg_jobqueue.security import content_security_policy

    @content_security_policy
    def view(request):
        response = HttpResponse("x")
        response["Content-Security-Policy"] = "default-src 'none'"
        return response

    assert view(Client().get("/").wsgi_request)["Content-Security-Policy"] == "default-src 'none'"


# -- in a real browser -------------------------------------------------------------------------

PROBE = r"""
const { createRequire } = require("node:module");
// node -e: process.argv is [node, ...arguments]
const [, frontend, chromiumPath, base, pagesJson] = process.argv;
const { chromium } = createRequire(frontend + "/package.json")("playwright-core");
const pages = JSON.parse(pagesJson);
(async () => {
  const browser = await chromium.launch({ executablePath: chromiumPath, headless: true,
                                          args: ["--no-sandbox"] });
  const out = {};
  try {
    for (const [name, { path, selector, login, then }] of Object.entries(pages)) {
      const context = await browser.newContext();
      const page = await context.newPage();
      const seen = { violations: [], console: [], errors: [], rendered: false, external: [] };
      await page.addInitScript(() => {
        window.__csp = [];
        document.addEventListener("securitypolicyviolation", (e) =>
          window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
      });
      page.on("console", (m) => { if (m.type() === "error" || /Content.Security.Policy/i.test(m.text()))
        seen.console.push(m.text()); });
      page.on("pageerror", (e) => seen.errors.push(String(e)));
      page.on("request", (r) => { if (!r.url().startsWith(base) && !r.url().startsWith("data:")
        && !r.url().startsWith("blob:")) seen.external.push(r.url()); });
      const visit = async (path, selector) => {
        await page.goto(base + path, { waitUntil: "load" });
        try {
          await page.locator(selector).first().waitFor({ timeout: 20000 });
          return true;
        } catch (e) { seen.errors.push(`not rendered: ${path} ${selector}`); return false; }
      };
      seen.rendered = await visit(path, selector);
      if (seen.rendered && login) {
        await page.getByLabel("Username").fill(login[0]);
        await page.getByLabel("Password").fill(login[1]);
        await page.getByRole("button", { name: "Sign in" }).click();
        for (const [next, nextSelector] of then) {
          await page.waitForTimeout(300);
          seen.rendered = (await visit(next, nextSelector)) && seen.rendered;
        }
      }
      await page.waitForTimeout(1000);
      seen.violations = await page.evaluate(() => window.__csp);
      out[name] = seen;
      await context.close();
    }
  } finally { await browser.close(); }
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
"""


@pytest.mark.skipif(not Path(CHROMIUM).exists() or shutil.which("node") is None
                    or not (FRONTEND / "node_modules" / "playwright-core").is_dir(),
                    reason="needs Chromium, node and frontend/node_modules (make test-e2e)")
@needs_build
def test_chromium_renders_each_page_with_no_csp_violation(live_server, make_user):
    from django_pg_jobqueue import services

    make_user("csp-operator", password="csp-operator-pw-1", perms=["view_job", "add_job", "change_job"])
    job = services.enqueue("noop", {"n": 1})
    pages = {
        "swagger": {"path": PAGES["swagger"], "selector": ".swagger-ui .info .title"},
        "redoc": {"path": PAGES["redoc"], "selector": ".api-content h1"},
        # The login form, then every page after logging in: the overview's charts, the lists,
        # a job's detail with its live timeline.
        "dashboard": {"path": "/login", "selector": "input[type=password]",
                      "login": ["csp-operator", "csp-operator-pw-1"],
                      "then": [["/", "svg"], ["/jobs", "table"], ["/failed", "h1"],
                               [f"/jobs/{job.id}", "[data-testid=status-badge]"]]},
    }
    proc = subprocess.run(["node", "-e", PROBE, str(FRONTEND), CHROMIUM, live_server.url,
                           json.dumps(pages)], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    for name, page in seen.items():
        assert page["rendered"], (name, page)
        assert page["violations"] == [], (name, page["violations"])
        assert not [m for m in page["console"] if "Content Security Policy" in m], (name, page["console"])
        assert page["errors"] == [], (name, page["errors"])
        assert page["external"] == [], (name, page["external"])  # nothing from a CDN
