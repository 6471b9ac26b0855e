// A row of `npm run doctor`'s report, shared by the checks in doctor.ts, doctor-discord.ts and doctor-database.ts (so none imports another's module for it).
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

/** An error's message for a row's detail. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
