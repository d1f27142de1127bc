import { LRUCache } from 'lru-cache';
import type { Types } from 'mongoose';
import { subscribedEndpoints, type EndpointRow, type WebhookEndpoints } from './webhook-endpoints.js';

/** An organisation's live endpoints as read at `readAt` (the reader's time, taken before the read). */
type Remembered = { endpoints: EndpointRow[]; readAt: number };

/**
 * Who an event is for, as its writer sees it: the organisation's live endpoints, remembered for half of the
 * activation delay (the delay `webhook add` gives a new endpoint before it receives events) by the processes
 * that write many events (the API and the workers), read for every event otherwise.
 */
export class WebhookAudience {
  private readonly remembered: { known: LRUCache<string, Remembered>; forMs: number } | null;

  /** `activationDelayMs`: the service's `WEBHOOK_ACTIVATION_DELAY_MS`; 0: nothing remembered. */
  constructor(
    private readonly endpoints: WebhookEndpoints,
    activationDelayMs: number,
  ) {
    const forMs = Math.floor(activationDelayMs / 2);
    this.remembered = forMs > 0 ? { known: new LRUCache({ max: 10_000 }), forMs } : null;
  }

  /**
   * Whether any endpoint of the organisation is subscribed to an event of `type` at `occurredAt`: asked by
   * the writer of an event before its insert (after taking its time), so an event nobody is subscribed to is
   * written already dispatched and costs the outbox nothing. The same read, with the same rule, as the
   * dispatch would make; an endpoint whose insert has not landed by then is missed by both alike.
   */
  async anySubscribed(organisationId: Types.ObjectId, type: string, occurredAt: Date): Promise<boolean> {
    const endpoints = await this.at(organisationId, occurredAt);
    return subscribedEndpoints(endpoints, { type, occurredAt }).length > 0;
  }

  /**
   * The organisation's live endpoints for an event at `occurredAt`: remembered from a read at most half the
   * activation delay before it. An endpoint missing from that read was added after it, so it is active only
   * a whole delay after (less the clocks' disagreement): not yet at `occurredAt`. An endpoint removed since is
   * still in it: its event gets a delivery all the same, which the delivery (reading its endpoint) fails
   * without sending anything, as it does for an endpoint removed after the dispatch.
   */
  async at(organisationId: Types.ObjectId, occurredAt: Date): Promise<EndpointRow[]> {
    const remembered = this.remembered;
    if (!remembered) return this.endpoints.live(organisationId);
    const key = organisationId.toHexString();
    const at = occurredAt.getTime();
    const known = remembered.known.get(key);
    if (known && at >= known.readAt && at < known.readAt + remembered.forMs) return known.endpoints;
    // Stamped with the event's time, taken before this read: never later than the read itself.
    const endpoints = await this.endpoints.live(organisationId);
    remembered.known.set(key, { endpoints, readAt: at });
    return endpoints;
  }
}
