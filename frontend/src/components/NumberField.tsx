/**
 * A labelled number box with its hint and the API's errors for it (marked invalid and read out
 * with the field). The create form's priority, attempts, delay and timeout are four of these.
 */
export function NumberField({
  name,
  label,
  value,
  onChange,
  min,
  max,
  step = 1,
  placeholder,
  hint,
  errors,
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
  return (
    <div className="field">
      <label htmlFor={name}>{label}</label>
      <input
        id={name}
        type="number"
        min={min}
        max={max}
        step={step}
        value={value}
        onChange={(e) => onChange(e.target.value)}
        placeholder={placeholder}
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
