import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';

/**
 * Signing secrets at rest: AES-256-GCM with a key from the configuration, so a copy of the database alone
 * cannot sign deliveries. The key is WEBHOOK_SECRET_KEY (base64 of 32 bytes) or, when unset, derived from
 * API_KEY_HASH_SECRET (HKDF, a label of its own): neither is ever in the database. Stored form:
 * `enc:v1:<iv>:<tag>:<ciphertext>` (base64url). A secret stored before encryption (a bare `whsec_…`) is still
 * read as it is; adding the endpoint again stores it encrypted.
 */
const PREFIX = 'enc:v1:';

export type SecretKeySettings = { WEBHOOK_SECRET_KEY?: string | undefined; API_KEY_HASH_SECRET: string };

/**
 * Keys derived so far, by their source. A pure memo (the same settings always give the same key, whichever
 * process asks), so it is kept here rather than built and passed by each process.
 */
const keys = new Map<string, Buffer>();

function keyOf(settings: SecretKeySettings): Buffer {
  const source = settings.WEBHOOK_SECRET_KEY ?? `derived:${settings.API_KEY_HASH_SECRET}`;
  let key = keys.get(source);
  if (!key) {
    key = settings.WEBHOOK_SECRET_KEY
      ? Buffer.from(settings.WEBHOOK_SECRET_KEY, 'base64')
      : Buffer.from(hkdfSync('sha256', settings.API_KEY_HASH_SECRET, '', 'webhook signing secrets', 32));
    keys.set(source, key);
  }
  return key;
}

export function sealSecret(secret: string, settings: SecretKeySettings): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyOf(settings), iv);
  const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return `${PREFIX}${[iv, cipher.getAuthTag(), ciphertext].map((b) => b.toString('base64url')).join(':')}`;
}

/**
 * Secrets opened, per key: every delivery to an endpoint signs with its secret, and opening it (AES-GCM, a key
 * object per call) was a tenth of a millisecond of a worker's CPU per delivery (profiled). Held in memory only,
 * where the opened secret is during a send anyway. A pure memo too (a stored secret and its key always open to
 * the same secret), hence module-level.
 */
const opened = new WeakMap<Buffer, LRUCache<string, string>>();

/** The secret of a stored value; throws when it was sealed with another key (the configuration changed). */
export function openSecret(stored: string, settings: SecretKeySettings): string {
  if (!stored.startsWith(PREFIX)) return stored;
  const key = keyOf(settings);
  let known = opened.get(key);
  if (!known) opened.set(key, (known = new LRUCache({ max: 1_000 })));
  let secret = known.get(stored);
  if (secret === undefined) known.set(stored, (secret = decrypt(stored, key)));
  return secret;
}

function decrypt(stored: string, key: Buffer): string {
  const [iv, tag, ciphertext] = stored
    .slice(PREFIX.length)
    .split(':')
    .map((p) => Buffer.from(p, 'base64url'));
  const decipher = createDecipheriv('aes-256-gcm', key, iv!);
  decipher.setAuthTag(tag!);
  try {
    return Buffer.concat([decipher.update(ciphertext!), decipher.final()]).toString('utf8');
  } catch {
    throw new Error(
      'a webhook signing secret cannot be read with this WEBHOOK_SECRET_KEY (was the key changed?)',
    );
  }
}
