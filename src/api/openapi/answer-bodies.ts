import { errorCatalogue, type ErrorCode } from '../http/errors.js';

/** The documented error body of `code` (its catalogue detail), with `extra` fields. */
export const error = (code: ErrorCode, extra: Record<string, unknown> = {}) => ({
  detail: errorCatalogue[code].detail,
  code,
  ...extra,
});
/** An error body with field errors at their paths. */
export const fieldError = (code: ErrorCode, errors: Array<{ detail: string; code: string; attr: string }>) =>
  error(code, { errors });
