import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import type { Config } from '../../config.js';
import { webhookEventTypes } from '../../domain/import-process/state.js';
import type { Storage } from '../../storage/index.js';
import { activeFromOf } from '../../storage/webhooks/webhook-endpoints.js';
import { checkWebhookUrl, UnsafeWebhookUrl } from '../webhooks/url-guard.js';
import { deliveryJobOptions } from '../../jobs/catalog.js';
import { oneOffConnection } from '../../infra/redis.js';
import { redisKeys } from '../../infra/redis-keys.js';
import { sealSecret } from '../webhooks/secret-box.js';
import { OperatorError } from './operations.js';

/** A signing secret in the Standard Webhooks form: `whsec_` + base64 of 32 random bytes. */
export const newSigningSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

/**
 * Operator actions on webhook subscriptions and deliveries (`import-admin webhook ...`). Each returns a
 * JSON-able object; a secret is shown once, when its endpoint is added.
 */
export class WebhookOperations {
  private readonly store: Storage['webhooks'];

  constructor(
    storage: Pick<Storage, 'webhooks'>,
    private readonly config: Pick<
      Config,
      | 'WEBHOOK_ALLOW_PRIVATE'
      | 'REDIS_URL'
      | 'REDIS_CLUSTER_NODES'
      | 'QUEUE_PREFIX'
      | 'WEBHOOK_SECRET_KEY'
      | 'API_KEY_HASH_SECRET'
      | 'WEBHOOK_ACTIVATION_DELAY_MS'
    >,
  ) {
    this.store = storage.webhooks;
  }

  async add(orgName: string, url: string, events: readonly string[] = []) {
    const org = await this.organisation(orgName);
    const unknown = events.filter((e) => !(webhookEventTypes as readonly string[]).includes(e));
    if (unknown.length > 0)
      throw new OperatorError(
        `unknown event type(s) ${unknown.join(', ')}; known: ${webhookEventTypes.join(', ')}`,
      );
    try {
      await checkWebhookUrl(url, this.config.WEBHOOK_ALLOW_PRIVATE);
    } catch (err) {
      if (err instanceof UnsafeWebhookUrl) throw new OperatorError(`webhook URL refused: ${err.message}`);
      throw err;
    }
    const secret = newSigningSecret();
    // Active from the service's delay after it is added, by the database server's clock (not this process's):
    // by then every event writer has let go of what it remembered of the organisation's endpoints before this
    // one (see `WebhookEndpoints.add` and `WebhookAudience`).
    const doc = await this.store.endpoints.add(
      {
        organisationId: org,
        url,
        events: [...new Set(events)],
        // Encrypted at rest: shown once here, never stored in clear.
        secret: sealSecret(secret, this.config),
      },
      this.config.WEBHOOK_ACTIVATION_DELAY_MS,
    );
    return {
      id: doc._id.toHexString(),
      url: doc.url,
      events: doc.events,
      active_from: activeFromOf(doc)!.toISOString(),
      secret,
    };
  }

  async list(orgName: string) {
    const rows = await this.store.endpoints.listed(await this.organisation(orgName));
    return rows.map((r) => ({
      id: r._id.toHexString(),
      url: r.url,
      events: r.events,
      created_at: r.createdAt?.toISOString() ?? null,
      active_from: activeFromOf(r)?.toISOString() ?? null,
    }));
  }

  /** Scoped by organisation: an id of another organisation's endpoint is one that does not exist. */
  async remove(orgName: string, id: string) {
    const org = await this.organisation(orgName);
    if (!(await this.store.endpoints.remove(org, id)))
      throw new OperatorError(`webhook ${id} does not exist`);
    return { id, removed: true };
  }

  /** Each with its latest state (its record's copy may be behind: `storage/webhooks/webhook-steps.ts`). */
  async deliveries(orgName: string, options: { failed?: boolean } = {}) {
    const rows = await this.store.deliveries.ofOrganisation(await this.organisation(orgName));
    return rows
      .filter((r) => !options.failed || r.latest.status === 'failed')
      .map((r) => ({
        id: r._id,
        event_id: r.eventId,
        type: r.type,
        endpoint_id: r.endpointId.toHexString(),
        status: r.latest.status,
        attempts: r.latest.attempts,
        last_http_status: r.latest.lastHttpStatus,
        next_attempt_at: r.latest.nextAttemptAt?.toISOString() ?? null,
      }));
  }

  /**
   * Sends a delivery again with the same `webhook-id`: a fresh series of attempts (the attempt count starts
   * over) under a job of its own, so it runs even though the delivery's first job has finished. Scoped by
   * organisation, like `remove`. Decided on the delivery's latest state: refused while it is pending.
   */
  async replay(orgName: string, id: string) {
    const org = await this.organisation(orgName);
    const latest = await this.store.deliveries.latestOf(org, id);
    if (!latest) throw new OperatorError(`delivery ${id} does not exist`);
    if (latest.status === 'pending')
      throw new OperatorError(
        `delivery ${id} is still pending (next attempt at ${latest.nextAttemptAt?.toISOString()})`,
      );
    const replays = await this.store.deliveries.replay({ id, organisationId: org }, latest, new Date());
    // A one-off connection that waits for Redis to be reachable (the CLI runs once, then exits).
    const connection = oneOffConnection(this.config);
    const queue = new Queue('webhooks', {
      connection,
      prefix: redisKeys(this.config.QUEUE_PREFIX).queuePrefix('webhooks'),
    });
    try {
      await queue.add(
        'deliver-webhook',
        { deliveryId: id, requestId: 'replay' },
        deliveryJobOptions(id, replays),
      );
    } finally {
      await queue.close();
      connection.disconnect();
    }
    return { id, status: 'pending', replays };
  }

  /** The id of the organisation an operator names. */
  private async organisation(name: string) {
    const org = await this.store.endpoints.organisationId(name);
    if (!org) throw new OperatorError(`organisation "${name}" does not exist`);
    return org;
  }
}
