import type { ReactNode } from "react";

/**
 * A button that shows or hides the element whose id `controls` names, saying which through
 * `aria-expanded`: the phone layout's menu and the job list's folded filters.
 */
export function ToggleButton({
  open,
  onToggle,
  controls,
  className,
  children,
}: {
  open: boolean;
  onToggle: (open: boolean) => void;
  controls: string;
  className: string;
  children: ReactNode;
}) {
  return (
    <button
      type="button"
      className={className}
      aria-expanded={open}
      aria-controls={controls}
      onClick={() => onToggle(!open)}
    >
      {children}
    </button>
  );
}
