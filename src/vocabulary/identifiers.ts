/**
 * An identifier as the service keys it (supplier code, external account number): trimmed, in Unicode NFC, so
 * the same text typed two ways ("CAFÉ" composed or decomposed, with stray spaces) names one account. The
 * service's schemas and the migration client both use it, so the client asks for the account the service has.
 */
export function normaliseIdentifier(value: string): string {
  return value.trim().normalize('NFC');
}
