// A row of `npm run doctor`'s report, shared by the checks in doctor.ts and doctor-database.ts (so neither imports the other's module for it).
/** One row of the report. */
export interface DoctorCheck {
  readonly name: string;
  /** `ok` ✓; `fail` ✗ (`blocks` says whether it stops Herald from speaking). */
  readonly status: 'ok' | 'fail';
  readonly detail: string;
  /** One line: what to do. Set on every failure. */
  readonly fix?: string;
  /** True when this failure stops Herald from speaking (the exit code is then 1). */
  readonly blocks?: boolean;
}
