import { type FormEvent, useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Navigate, useNavigate, useSearchParams } from "react-router";
import { authMutations, meOptions } from "../api/auth";
import { isApiError } from "../api/client";
import { InputField } from "../components/InputField";
import { runtimeConfig } from "../config";

/** Only same-site paths: `?next=https://evil.example` must not become an open redirect. */
export function safeNext(next: string | null): string {
  return next && next.startsWith("/") && !next.startsWith("//") ? next : "/";
}

/** The host's login page, coming back to `next` (a dashboard route) afterwards. */
export function hostLoginHref(loginUrl: string, basename: string, next: string): string {
  const back = basename.replace(/\/$/, "") + next;
  return `${loginUrl}${loginUrl.includes("?") ? "&" : "?"}next=${encodeURIComponent(back)}`;
}

export function LoginPage() {
  return runtimeConfig().passwordLogin ? <PasswordLogin /> : <HostLogin />;
}

/** The password form is off (JOB_API_PASSWORD_LOGIN): log in where the site logs people in. */
function HostLogin() {
  const [params] = useSearchParams();
  const next = safeNext(params.get("next"));
  const me = useQuery(meOptions());
  const { loginUrl, basename } = runtimeConfig();
  if (me.data) return <Navigate to={next} replace />;
  return (
    <div className="login">
      <div className="panel" aria-labelledby="login-title">
        <h1 id="login-title">Sign in</h1>
        <p>Job queue dashboard</p>
        {loginUrl ? (
          <>
            <p>This dashboard uses the site's own login. Sign in there and you come back here.</p>
            <a className="button primary" href={hostLoginHref(loginUrl, basename, next)}>
              Sign in on the site
            </a>
          </>
        ) : (
          <p>
            This dashboard uses the site's own login, and the site has no login page set (LOGIN_URL). Sign in to the
            site, then reload this page.
          </p>
        )}
      </div>
    </div>
  );
}

function PasswordLogin() {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [params] = useSearchParams();
  const next = safeNext(params.get("next"));
  const me = useQuery(meOptions());
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const login = useMutation({
    ...authMutations.login(queryClient),
    onSuccess: async () => {
      await authMutations.login(queryClient).onSuccess();
      navigate(next, { replace: true });
    },
  });

  if (me.data && !login.isPending) return <Navigate to={next} replace />;

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    login.mutate({ username, password });
  };
  const fieldErrors = isApiError(login.error) ? login.error.fieldErrors : {};
  const general = login.error
    ? (fieldErrors.non_field_errors?.[0] ?? (isApiError(login.error, 400) ? null : login.error.message))
    : null;

  return (
    <div className="login">
      <form className="panel" onSubmit={onSubmit} noValidate aria-labelledby="login-title">
        <h1 id="login-title">Sign in</h1>
        <p>Job queue dashboard</p>
        {general && (
          <div className="notice error" role="alert">
            {general.charAt(0).toUpperCase() + general.slice(1)}
          </div>
        )}
        <InputField
          name="username"
          label="Username"
          autoComplete="username"
          required
          autoFocus
          value={username}
          onChange={setUsername}
          errors={fieldErrors.username}
        />
        <InputField
          name="password"
          label="Password"
          type="password"
          autoComplete="current-password"
          required
          value={password}
          onChange={setPassword}
          errors={fieldErrors.password}
        />
        <button
          type="submit"
          className="primary"
          disabled={login.isPending || !username || !password}
          style={{ width: "100%", justifyContent: "center" }}
        >
          {login.isPending ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </div>
  );
}
