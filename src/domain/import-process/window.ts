import type { FieldError } from '../validation/field-error.js';
import { formatUtcDatetime } from '../../schemas/primitives.js';

/** A window start this far in the past still counts as now (clients' clocks drift). */
export const CLOCK_SKEW_MS = 60_000;
/** A task's window ends at most this long after the request (and, by default, this long after its start). */
export const MAX_WINDOW_MS = 4 * 24 * 3600 * 1000;

export type TaskWindow = { windowStart: string; windowEnd: string };

/**
 * The window a schedule's task runs in: absent or null bounds take their defaults (start now, end four days
 * after the start), then the platform's rules: a start more than a minute in the past, a given end more than
 * four days from now, or an end not after the start are refused. Errors are at `task_params.<field>`.
 */
export function taskWindow(
  params: { schedule_window_start?: string | null; schedule_window_end?: string | null },
  now: Date,
): { ok: true; window: TaskWindow } | { ok: false; errors: FieldError[] } {
  const nowMs = now.getTime();
  const start = params.schedule_window_start ? Date.parse(params.schedule_window_start) : nowMs;
  const end = params.schedule_window_end ? Date.parse(params.schedule_window_end) : start + MAX_WINDOW_MS;
  const errors: FieldError[] = [];
  if (start < nowMs - CLOCK_SKEW_MS) {
    errors.push({
      code: 'schedule_window_start_in_past',
      attr: 'task_params.schedule_window_start',
      detail: 'The schedule window cannot start in the past.',
    });
  }
  // Only an end the client gave is bounded: the default end (four days after a later start) is the platform's.
  if (params.schedule_window_end && end > nowMs + MAX_WINDOW_MS) {
    errors.push({
      code: 'schedule_window_end_too_far_in_future',
      attr: 'task_params.schedule_window_end',
      detail: 'The schedule window must end within 4 days from now.',
    });
  }
  if (end <= start) {
    errors.push({
      code: 'schedule_window_start__after_end',
      attr: 'task_params.schedule_window_end',
      detail: 'The schedule window must end after it starts.',
    });
  }
  if (errors.length > 0) return { ok: false, errors };
  return {
    ok: true,
    window: {
      windowStart: formatUtcDatetime(new Date(Math.max(start, nowMs - CLOCK_SKEW_MS))),
      windowEnd: formatUtcDatetime(new Date(end)),
    },
  };
}
