import { createHmac, randomBytes } from 'node:crypto';

const KEY_PREFIX = 'amk_';

/** A new API key: 32 random bytes; `prefix` is the public part operators use to name it. */
export function generateApiKey(): { key: string; prefix: string } {
  const key = KEY_PREFIX + randomBytes(32).toString('base64url');
  return { key, prefix: key.slice(0, KEY_PREFIX.length + 8) };
}

/** Keyed hash: a leaked database alone does not let anyone check guesses. */
export function hashApiKey(key: string, secret: string): string {
  return createHmac('sha256', secret).update(key).digest('hex');
}
