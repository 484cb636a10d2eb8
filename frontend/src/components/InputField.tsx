import type { InputHTMLAttributes } from "react";

/**
 * A labelled input with its hint and the API's errors for it (marked invalid and read out with
 * the field). The login form's username and password are two of these.
 */
export function InputField({
  name,
  label,
  value,
  onChange,
  hint,
  errors,
  ...input
}: {
  name: string;
  label: string;
  value: string;
  onChange: (value: string) => void;
  hint?: string;
  errors?: string[];
} & Omit<InputHTMLAttributes<HTMLInputElement>, "id" | "name" | "value" | "onChange">) {
  return (
    <div className="field">
      <label htmlFor={name}>{label}</label>
      <input
        id={name}
        name={name}
        {...input}
        value={value}
        onChange={(e) => onChange(e.target.value)}
        aria-invalid={!!errors}
        aria-describedby={errors ? `err-${name}` : undefined}
      />
      {hint && <div className="hint">{hint}</div>}
      {errors && (
        <div className="field-error" id={`err-${name}`} data-testid={`error-${name}`}>
          {errors.join(" ")}
        </div>
      )}
    </div>
  );
}

/**
 * A labelled number box with its hint and the API's errors for it. The create form's priority,
 * attempts, delay and timeout are four of these.
 */
export function NumberField({
  step = 1,
  ...field
}: {
  name: string;
  label: string;
  value: string;
  onChange: (value: string) => void;
  min?: number;
  max?: number;
  step?: number | "any";
  placeholder?: string;
  hint?: string;
  errors?: string[];
}) {
  return <InputField type="number" step={step} {...field} />;
}
