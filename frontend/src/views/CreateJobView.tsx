/**
 * The create-job form as its route (pages/CreateJobPage.tsx) loaded it: the creatable types,
 * the form (its fields are the view's own state) and the API's answers beside their fields.
 */
import { type FormEvent, useState } from "react";
import { Link } from "react-router";
import { ApiError, isApiError } from "../api/client";
import type { JobCreate, JobType } from "../api/types";
import { NumberField } from "../components/InputField";
import { PayloadEditor } from "../components/PayloadEditor";
import { ErrorState, Loading } from "../components/States";
import { checkPayload } from "../lib/payload";
import type { Loaded } from "./types";

type Form = {
  type: string;
  payload: string;
  priority: string;
  max_attempts: string;
  queue: string;
  delay_seconds: string;
  timeout_seconds: string;
  idempotency_key: string;
};

const EMPTY: Form = {
  type: "",
  payload: "{}",
  priority: "",
  max_attempts: "",
  queue: "",
  delay_seconds: "",
  timeout_seconds: "",
  idempotency_key: "",
};

/** The form as the API's create body: blank fields are left out, so the type's defaults apply. */
export function toCreateBody(form: Form): JobCreate {
  const check = checkPayload(form.payload);
  const body: JobCreate = { type: form.type, payload: check.ok ? check.value : {} };
  const num = (s: string) => (s.trim() === "" ? undefined : Number(s));
  const priority = num(form.priority);
  const maxAttempts = num(form.max_attempts);
  const delay = num(form.delay_seconds);
  const timeout = num(form.timeout_seconds);
  if (priority !== undefined) body.priority = priority;
  if (maxAttempts !== undefined) body.max_attempts = maxAttempts;
  if (delay !== undefined) body.delay_seconds = delay;
  if (timeout !== undefined) body.timeout_seconds = timeout;
  if (form.queue.trim()) body.queue = form.queue.trim();
  if (form.idempotency_key.trim()) body.idempotency_key = form.idempotency_key.trim();
  return body;
}

/** Creating the job, as the route's mutation runs it (it opens the job's page once made). */
export type CreateAction = { mutate: (body: JobCreate) => void; isPending: boolean; error: Error | null };

export function CreateJobView({
  canCreate,
  types,
  create,
}: {
  canCreate: boolean;
  types: Loaded<JobType[]>;
  create: CreateAction;
}) {
  if (!canCreate) {
    return (
      <ErrorState error={new ApiError(403, { detail: "Your account may not create jobs." })} title="Not allowed" />
    );
  }
  return (
    <>
      <div className="page-head">
        <div>
          <h1>Create job</h1>
          <p>Enqueue one job. Blank fields take the type's defaults.</p>
        </div>
      </div>
      {types.isPending ? (
        <div className="panel">
          <Loading rows={6} label="Loading job types…" />
        </div>
      ) : types.isError && !types.data ? (
        <ErrorState error={types.error} onRetry={() => void types.refetch()} title="Could not load the job types" />
      ) : types.data!.some((t) => t.creatable) ? (
        <CreateForm types={types.data!.filter((t) => t.creatable)} create={create} />
      ) : (
        <NothingCreatable />
      )}
    </>
  );
}

/** No type may be created through the API: say so, and which settings open it, in full. */
function NothingCreatable() {
  return (
    <section className="panel" data-testid="nothing-creatable">
      <div className="notice" role="status">
        <p>
          <strong>No job type may be created here.</strong> The API creates only the job types listed in the server's{" "}
          <code>JOB_API_CREATABLE_TYPES</code> setting, and the Django tasks listed in{" "}
          <code>JOB_API_CREATABLE_TASKS</code>; both are empty.
        </p>
        <p>
          Add a type to one of them in the project's settings and reload this page. Jobs your own code enqueues are not
          limited by either.
        </p>
      </div>
      <Link to="/jobs">Back to the jobs</Link>
    </section>
  );
}

function CreateForm({ types, create }: { types: JobType[]; create: CreateAction }) {
  const [form, setForm] = useState<Form>(() => ({
    ...EMPTY,
    type: types[0]?.name ?? "",
    payload: JSON.stringify(types[0]?.payload_example ?? {}, null, 2),
  }));
  const [payloadTouched, setPayloadTouched] = useState(false);
  const spec = types.find((t) => t.name === form.type);
  const error = create.error;
  const fieldErrors = isApiError(error) ? { ...error.fieldErrors } : {};
  if (isApiError(error, 413)) fieldErrors.payload = [error.message];
  if (isApiError(error, 409) && error.code === "idempotency_conflict") fieldErrors.idempotency_key = [error.message];
  const known = new Set([
    "type",
    "priority",
    "max_attempts",
    "queue",
    "delay_seconds",
    "timeout_seconds",
    "idempotency_key",
    "run_at",
  ]);
  const otherErrors = Object.entries(fieldErrors).filter(
    ([k]) => !known.has(k) && k !== "payload" && !k.startsWith("payload."),
  );
  const conflictJobId =
    isApiError(error, 409) && error.body && typeof error.body === "object"
      ? (error.body as { job_id?: number }).job_id
      : undefined;
  const payloadOk = checkPayload(form.payload).ok;

  const set = (k: keyof Form) => (e: { target: { value: string } }) => setForm({ ...form, [k]: e.target.value });
  const setField = (k: keyof Form) => (value: string) => setForm({ ...form, [k]: value });
  // A new type brings its example payload, unless the person already wrote their own.
  const setType = (e: { target: { value: string } }) => {
    const next = types.find((t) => t.name === e.target.value);
    setForm({
      ...form,
      type: e.target.value,
      payload: payloadTouched || !next ? form.payload : JSON.stringify(next.payload_example ?? {}, null, 2),
    });
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!payloadOk || !form.type) return;
    create.mutate(toCreateBody(form));
  };
  const errorFor = (k: string) =>
    fieldErrors[k] ? (
      <div className="field-error" id={`err-${k}`} data-testid={`error-${k}`}>
        {fieldErrors[k].join(" ")}
      </div>
    ) : null;
  const aria = (k: string) => ({
    "aria-invalid": !!fieldErrors[k],
    "aria-describedby": fieldErrors[k] ? `err-${k}` : undefined,
  });

  return (
    <form className="grid grid-2" onSubmit={submit} noValidate aria-label="Create a job">
      <section className="panel">
        {error &&
          !isApiError(error, 400) &&
          !isApiError(error, 413) &&
          !(isApiError(error, 409) && error.code === "idempotency_conflict") && (
            <div className="notice error" role="alert">
              {error.message}
            </div>
          )}
        {isApiError(error, 400) && (
          <div className="notice error" role="alert" data-testid="create-error">
            The server refused the job; see the fields marked below.
            {otherErrors.map(([k, m]) => (
              <div key={k}>
                {k === "non_field_errors" ? "" : `${k}: `}
                {m.join(" ")}
              </div>
            ))}
          </div>
        )}
        <div className="field">
          <label htmlFor="type">Type</label>
          <select id="type" value={form.type} onChange={setType} {...aria("type")} required>
            {types.map((t) => (
              <option key={t.name} value={t.name}>
                {t.name}
              </option>
            ))}
          </select>
          {spec?.description && <div className="hint">{spec.description}</div>}
          {errorFor("type")}
        </div>
        <PayloadEditor
          value={form.payload}
          onChange={(text) => {
            setPayloadTouched(true);
            setForm({ ...form, payload: text });
          }}
          serverErrors={fieldErrors}
          example={spec?.payload_example}
        />
        <div className="actions">
          <button type="submit" className="primary" disabled={create.isPending || !payloadOk || !form.type}>
            {create.isPending ? "Creating…" : "Create job"}
          </button>
          <Link to="/jobs">Cancel</Link>
        </div>
      </section>
      <section className="panel">
        <h3 style={{ marginBottom: 12 }}>Options</h3>
        <div className="field-row">
          <NumberField
            name="priority"
            label="Priority"
            min={-100}
            max={100}
            value={form.priority}
            onChange={setField("priority")}
            placeholder={String(spec?.priority ?? 0)}
            hint="-100..100, higher runs first"
            errors={fieldErrors.priority}
          />
          <NumberField
            name="max_attempts"
            label="Max attempts"
            min={1}
            value={form.max_attempts}
            onChange={setField("max_attempts")}
            placeholder={String(spec?.max_attempts ?? "")}
            errors={fieldErrors.max_attempts}
          />
        </div>
        <div className="field-row">
          <NumberField
            name="delay_seconds"
            label="Delay (seconds)"
            min={0}
            step="any"
            value={form.delay_seconds}
            onChange={setField("delay_seconds")}
            placeholder="0"
            errors={fieldErrors.delay_seconds}
          />
          <NumberField
            name="timeout_seconds"
            label="Timeout (seconds)"
            min={1}
            value={form.timeout_seconds}
            onChange={setField("timeout_seconds")}
            placeholder={spec?.timeout_seconds ? String(spec.timeout_seconds) : "default"}
            errors={fieldErrors.timeout_seconds}
          />
        </div>
        <div className="field">
          <label htmlFor="queue">Queue</label>
          <input
            id="queue"
            value={form.queue}
            onChange={set("queue")}
            placeholder={spec?.queue ?? "default"}
            {...aria("queue")}
          />
          {errorFor("queue")}
        </div>
        <div className="field">
          <label htmlFor="idempotency_key">Idempotency key</label>
          <input
            id="idempotency_key"
            value={form.idempotency_key}
            onChange={set("idempotency_key")}
            placeholder="optional, e.g. welcome-ada"
            {...aria("idempotency_key")}
          />
          <div className="hint">Sending the same key and request again returns the first job instead of a new one.</div>
          {errorFor("idempotency_key")}
          {conflictJobId && (
            <div className="hint">
              <Link to={`/jobs/${conflictJobId}`}>Open job #{conflictJobId}, which holds this key</Link>
            </div>
          )}
        </div>
      </section>
    </form>
  );
}
