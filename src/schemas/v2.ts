import { z } from 'zod';
import { accountPayloadSchema } from './account.js';
import { isoDatetime } from './primitives.js';

/** The v2 creation task's parameters: every field optional (a null window bound takes its default). */
export const taskParamsSchema = z.strictObject({
  is_dry_run: z.boolean().optional(),
  schedule_window_start: isoDatetime.nullable().optional(),
  schedule_window_end: isoDatetime.nullable().optional(),
});
export type TaskParams = z.output<typeof taskParamsSchema>;

/**
 * The v2 request envelope, checked before the account: `payload` must be an object (the account itself is
 * validated by the v1 rules, with v1 paths); `task_params` is required by the schedule, optional on validate.
 */
export const v2EnvelopeSchema = z.strictObject({
  payload: z.record(z.string(), z.unknown()),
  task_params: taskParamsSchema.optional(),
});
export const v2ScheduleEnvelopeSchema = v2EnvelopeSchema.extend({ task_params: taskParamsSchema });

/** For the OpenAPI document. */
export const v2AccountRequestSchema = z.strictObject({
  payload: accountPayloadSchema,
  task_params: taskParamsSchema,
});
