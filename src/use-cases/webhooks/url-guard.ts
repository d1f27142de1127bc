import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { withTimeout } from '../../infra/timeout.js';

/**
 * The SSRF guard of webhook endpoints: an endpoint is an `https://` URL whose host resolves only to public
 * unicast addresses. Checked when an endpoint is added and again at every send, where the connection then
 * goes to the address that was checked (no second lookup that DNS rebinding could answer differently).
 * `allowPrivate` (WEBHOOK_ALLOW_PRIVATE, for development and tests) lifts both rules.
 */

export class UnsafeWebhookUrl extends Error {}

/** The host did not resolve within the delivery's time: not unsafe, only not answered (the delivery retries). */
export class WebhookLookupTimeout extends Error {}

/**
 * Whether an address may be called: global unicast only. IPv4-mapped IPv6 (`::ffff:a.b.c.d`) is judged as its
 * IPv4 address; IPv4-compatible IPv6 (`::a.b.c.d`, deprecated, which some stacks route to the IPv4 address) is
 * never called. NAT64, 6to4 and Teredo blocks are not unicast to ipaddr.js, so they are refused too.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    // ipaddr.js reads `::a.b.c.d` as mapped; only `::ffff:a.b.c.d` is. The compatible form, written with dots or
    // in hex (`::7f00:1`, as URL parsing writes `[::127.0.0.1]`), is refused.
    const zeros = (n: number) => v6.parts.slice(0, n).every((part) => part === 0);
    if (address.includes('.') ? !/^::ffff:/i.test(address) && zeros(5) : zeros(6)) return false;
    if (v6.isIPv4MappedAddress()) parsed = v6.toIPv4Address();
  }
  // ipaddr.js names every special-purpose block (loopback, private, linkLocal, uniqueLocal, carrierGradeNat,
  // multicast, reserved, 6to4, teredo, ...); only what it calls unicast is the public internet.
  return parsed.range() === 'unicast';
}

export type CheckedUrl = { url: URL; address: string; family: 4 | 6 };

type Lookup = (host: string) => Promise<Array<{ address: string; family: number }>>;
const systemLookup: Lookup = (host) => lookup(host, { all: true, verbatim: true });

/**
 * Parses and checks an endpoint URL, resolving its host; throws `UnsafeWebhookUrl` with the reason, or
 * `WebhookLookupTimeout` when the host does not resolve within `lookupTimeoutMs` (a delivery holds its endpoint's
 * place while it resolves: the lookup is part of the delivery's time).
 */
export async function checkWebhookUrl(
  raw: string,
  allowPrivate: boolean,
  { lookupTimeoutMs = 10_000, resolve = systemLookup }: { lookupTimeoutMs?: number; resolve?: Lookup } = {},
): Promise<CheckedUrl> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UnsafeWebhookUrl('not a valid URL');
  }
  if (url.username || url.password) throw new UnsafeWebhookUrl('credentials in the URL are not allowed');
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:'))
    throw new UnsafeWebhookUrl('the URL must be https://');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host)
    ? [{ address: host, family: isIP(host) as 4 | 6 }]
    : await withTimeout(
        resolve(host).catch(() => {
          throw new UnsafeWebhookUrl(`the host ${host} does not resolve`);
        }),
        lookupTimeoutMs,
      ).catch((err: unknown) => {
        if (err instanceof UnsafeWebhookUrl) throw err;
        throw new WebhookLookupTimeout(`the host ${host} did not resolve within ${lookupTimeoutMs} ms`);
      });
  if (addresses.length === 0) throw new UnsafeWebhookUrl(`the host ${host} does not resolve`);
  if (!allowPrivate) {
    const blocked = addresses.find((a) => !isPublicAddress(a.address));
    if (blocked) throw new UnsafeWebhookUrl(`the host resolves to a non-public address (${blocked.address})`);
  }
  const first = addresses[0]!;
  return { url, address: first.address, family: first.family === 6 ? 6 : 4 };
}
