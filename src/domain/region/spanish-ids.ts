// Check-character algorithms of Spanish identifiers. Inputs are expected upper case without separators.

const DNI_LETTERS = 'TRWAGMYFPDXBNJZSQVHLCKE';

/** The DNI/NIE check letter of a number. */
export const dniLetter = (n: number): string => DNI_LETTERS[n % 23]!;

/** DNI: 8 digits + letter, letter = table[number mod 23]. */
export function isValidDni(value: string): boolean {
  const m = /^(\d{8})([A-Z])$/.exec(value);
  return m !== null && DNI_LETTERS[Number(m[1]) % 23] === m[2];
}

/** NIE: X/Y/Z (read as 0/1/2) + 7 digits + letter, checked like a DNI. */
export function isValidNie(value: string): boolean {
  const m = /^([XYZ])(\d{7})([A-Z])$/.exec(value);
  if (!m) return false;
  const number = Number(`${'XYZ'.indexOf(m[1]!)}${m[2]}`);
  return DNI_LETTERS[number % 23] === m[3];
}

const CIF_LETTER_CONTROL = 'JABCDEFGHI';

/** CIF: organisation letter + 7 digits + control (digit or letter depending on the organisation type). */
export function isValidCif(value: string): boolean {
  const m = /^([ABCDEFGHJNPQRSUVW])(\d{7})([0-9A-J])$/.exec(value);
  if (!m) return false;
  const [type, digits, control] = [m[1]!, m[2]!, m[3]!];
  let sum = 0;
  for (let i = 0; i < 7; i++) {
    const d = Number(digits[i]);
    if (i % 2 === 1) {
      sum += d;
    } else {
      const doubled = d * 2;
      sum += Math.floor(doubled / 10) + (doubled % 10);
    }
  }
  const check = (10 - (sum % 10)) % 10;
  const asDigit = String(check);
  const asLetter = CIF_LETTER_CONTROL[check]!;
  if ('PQRSNW'.includes(type)) return control === asLetter;
  if ('ABEH'.includes(type)) return control === asDigit;
  return control === asDigit || control === asLetter;
}

export function isValidSpanishFiscalCode(value: string): boolean {
  return isValidDni(value) || isValidNie(value) || isValidCif(value);
}

/** The two CUPS check letters of its 16 digits: n mod 529, split in base 23 over the DNI letter table. */
export function cupsCheckLetters(sixteenDigits: string): string {
  const q = Number(BigInt(sixteenDigits) % 529n);
  return DNI_LETTERS[Math.floor(q / 23)]! + DNI_LETTERS[q % 23]!;
}

/** CUPS: "ES" + 16 digits + 2 check letters, optionally + border point number (digit) and type letter. */
export function isValidCups(value: string): boolean {
  const m = /^ES(\d{16})([A-Z]{2})(\d[FPRCXYZ])?$/.exec(value);
  return m !== null && cupsCheckLetters(m[1]!) === m[2];
}
