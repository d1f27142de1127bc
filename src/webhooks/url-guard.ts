import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * The SSRF guard of webhook endpoints: an endpoint is an `https://` URL whose host resolves only to public
 * unicast addresses. Checked when an endpoint is added and again at every send, where the connection then
 * goes to the address that was checked (no second lookup that DNS rebinding could answer differently).
 * `allowPrivate` (WEBHOOK_ALLOW_PRIVATE, for development and tests) lifts both rules.
 */

export class UnsafeWebhookUrl extends Error {}

/** Whether an address may be called: global unicast only (IPv4-mapped IPv6 judged as its IPv4 address). */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress())
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  // ipaddr.js names every special-purpose block (loopback, private, linkLocal, uniqueLocal, carrierGradeNat,
  // multicast, reserved, 6to4, teredo, ...); only what it calls unicast is the public internet.
  return parsed.range() === 'unicast';
}

export type CheckedUrl = { url: URL; address: string; family: 4 | 6 };

/** Parses and checks an endpoint URL, resolving its host; throws `UnsafeWebhookUrl` with the reason. */
export async function checkWebhookUrl(raw: string, allowPrivate: boolean): Promise<CheckedUrl> {
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
    : await lookup(host, { all: true, verbatim: true }).catch(() => {
        throw new UnsafeWebhookUrl(`the host ${host} does not resolve`);
      });
  if (addresses.length === 0) throw new UnsafeWebhookUrl(`the host ${host} does not resolve`);
  if (!allowPrivate) {
    const blocked = addresses.find((a) => !isPublicAddress(a.address));
    if (blocked) throw new UnsafeWebhookUrl(`the host resolves to a non-public address (${blocked.address})`);
  }
  const first = addresses[0]!;
  return { url, address: first.address, family: first.family === 6 ? 6 : 4 };
}
