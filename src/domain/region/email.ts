// E-mail checks shared by every region: a practical syntax check and a test-address heuristic.

const EMAIL_RE =
  /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$/;

export function isValidEmail(value: string): boolean {
  const at = value.lastIndexOf('@');
  return value.length <= 254 && at > 0 && at <= 64 && EMAIL_RE.test(value);
}

// RFC 2606/6761 reserved names plus common placeholder and disposable domains.
const TEST_DOMAINS = new Set([
  'example.com',
  'example.org',
  'example.net',
  'example.es',
  'test.com',
  'test.es',
  'test.org',
  'prueba.com',
  'prueba.es',
  'ejemplo.com',
  'ejemplo.es',
  'fake.com',
  'invalid.com',
  'mailinator.com',
  'yopmail.com',
  'guerrillamail.com',
  '10minutemail.com',
  'tempmail.com',
  'localhost',
]);
const TEST_TLDS = ['test', 'example', 'invalid', 'localhost', 'local'];
const TEST_LOCAL_RE =
  /^(test|testing|tester|prueba|pruebas|fake|dummy|demo|sample|noreply|no-reply|asdf|qwerty|foo|bar|xxx+)([._+-]?\d*)$/;

export function isLikelyTestEmail(value: string): boolean {
  const at = value.lastIndexOf('@');
  const local = value.slice(0, at).toLowerCase();
  const domain = value.slice(at + 1).toLowerCase();
  const tld = domain.slice(domain.lastIndexOf('.') + 1);
  return TEST_DOMAINS.has(domain) || TEST_TLDS.includes(tld) || TEST_LOCAL_RE.test(local);
}
