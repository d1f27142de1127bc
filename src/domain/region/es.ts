import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import type { RegionProfile } from './profile.js';
import { isValidCups, isValidSpanishFiscalCode } from './spanish-ids.js';

const MOBILE_TYPES = new Set(['MOBILE', 'FIXED_LINE_OR_MOBILE']);

/** Spain: phone numbers, postal codes, DNI/NIE/CIF and CUPS. */
export const esProfile: RegionProfile = {
  name: 'ES',
  phoneProblem(value, kind) {
    const phone = parsePhoneNumberFromString(value, 'ES');
    // With the full ("max") metadata a number is valid exactly when it has a type (that is how `isValid()`
    // decides it), so one type lookup answers both questions.
    const type = phone?.country === 'ES' ? phone.getType() : undefined;
    if (type === undefined) return 'Enter a valid Spanish phone number.';
    // A landline field may hold any Spanish number (customers often give a mobile there); not the reverse.
    if (kind === 'mobile' && !MOBILE_TYPES.has(type)) return 'Enter a Spanish mobile number.';
    return null;
  },
  postcodeProblem(value) {
    const m = /^(\d{2})\d{3}$/.exec(value);
    const province = m ? Number(m[1]) : 0;
    return province >= 1 && province <= 52
      ? null
      : 'Enter a 5-digit Spanish postal code (province 01 to 52).';
  },
  fiscalCodeProblem(value) {
    return isValidSpanishFiscalCode(value)
      ? null
      : 'Enter a valid DNI, NIE or CIF with its check character, upper case and without separators.';
  },
  supplyPointIdentifierProblem(value) {
    return isValidCups(value) ? null : 'Enter a valid CUPS: "ES", 16 digits and 2 check letters, upper case.';
  },
};
