/**
 * The command line a report records: every argument as it was given, quoted as a POSIX shell would need it,
 * with secrets redacted. The client takes its key from the environment (never a flag), so a secret in the
 * arguments is a mistake (a key pasted as a path, an option no version has): it is still never written to a
 * report. Redacted: the value of any option whose name says it is a secret (`--token x`, `--api-key=x`), the
 * text of the given secrets (the API key of the environment), and anything shaped like an API key (`amk_…`)
 * or a token (a JWT, `eyJ….….…`).
 */

export const REDACTED = '<redacted>';

const SECRET_OPTION = /token|key|secret|passw|credential|bearer/i;
const SECRET_SHAPES = [/amk_[A-Za-z0-9_-]{8,}/g, /eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g];
/** A secret shorter than this is not looked for as text (it would blank out ordinary words). */
const MIN_SECRET_LENGTH = 8;

/** `text` with every secret in it replaced by `<redacted>`. */
export function redact(text: string, secrets: readonly (string | undefined)[] = []): string {
  let out = text;
  for (const secret of secrets)
    if (secret && secret.length >= MIN_SECRET_LENGTH) out = out.replaceAll(secret, REDACTED);
  for (const shape of SECRET_SHAPES) out = out.replace(shape, REDACTED);
  return out;
}

/** One argument as a POSIX shell reads it back (single quotes when it holds anything but plain characters). */
function quote(arg: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(arg)) return arg;
  return `'${arg.replaceAll("'", `'\\''`)}'`;
}

/** `program` and `args` as one command line, secrets redacted (see above). */
export function commandLine(
  program: string,
  args: readonly string[],
  secrets: readonly (string | undefined)[] = [],
): string {
  const words: string[] = [program];
  let valueIsSecret = false;
  let options = true;
  for (const arg of args) {
    if (valueIsSecret) {
      words.push(REDACTED);
      valueIsSecret = false;
      continue;
    }
    if (options && arg === '--') {
      options = false;
      words.push(arg);
      continue;
    }
    const option = options ? /^(--?[A-Za-z][^=]*)(=.*)?$/s.exec(arg) : null;
    if (option && SECRET_OPTION.test(option[1]!)) {
      if (option[2] === undefined) {
        words.push(option[1]!);
        valueIsSecret = true;
      } else words.push(`${option[1]!}=${REDACTED}`);
      continue;
    }
    words.push(redact(quote(arg), secrets));
  }
  return words.join(' ');
}
