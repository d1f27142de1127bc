import type { Models } from '../models/index.js';
import { WebhookAudience } from './webhook-audience.js';
import { WebhookDeliveries } from './webhook-deliveries.js';
import { WebhookEndpoints } from './webhook-endpoints.js';
import { WebhookOutbox } from './webhook-outbox.js';

/**
 * The repository of webhooks, by concept: organisations' endpoints, who an event is for (`audience`), the
 * deliveries and their due entries, and the outbox side of import events. Built once per process with the
 * storage object (`storage.webhooks`): the audience and the outbox's pages are what this process remembers.
 */
export type WebhookStore = {
  endpoints: WebhookEndpoints;
  audience: WebhookAudience;
  deliveries: WebhookDeliveries;
  outbox: WebhookOutbox;
};

/**
 * `rememberAudienceMs`: the activation delay (`WEBHOOK_ACTIVATION_DELAY_MS`) when event writers may remember an
 * organisation's endpoints for half of it (the API and the workers); 0 to read them for every event.
 */
export function createWebhookStore(models: Models, options: { rememberAudienceMs: number }): WebhookStore {
  const endpoints = new WebhookEndpoints(models);
  return {
    endpoints,
    audience: new WebhookAudience(endpoints, options.rememberAudienceMs),
    deliveries: new WebhookDeliveries(models),
    outbox: new WebhookOutbox(models),
  };
}
