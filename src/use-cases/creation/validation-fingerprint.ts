import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../../config.js';
import { deploymentCatalogue, validationContextAt } from '../../domain/validation/deployment.js';
import {
  parseValidatedAccount,
  validateAccount,
  type ValidationContext,
  type ValidationResult,
} from '../../domain/validation/index.js';
import type { AccountPayload } from '../../schemas/account.js';
import type { StagedText } from '../../storage/processes/import-processes.js';
import type { Catalogue } from '../../vocabulary/catalogue.js';

/**
 * What an account's validation depended on, as one hash: the validation code (every file of `domain/`,
 * `schemas/` and `vocabulary/` as this process runs them, and the versions of the libraries they call), the
 * enumeration catalogue, the region and the day. Staging records it with the payload it validated; a creation that
 * computes the same fingerprint knows that validating the same payload again would give the same answer
 * (it passed), so it only parses it. Anything else (a deploy that changed a rule, another catalogue, a
 * supplier moved to another region, the next day's date rules, a payload staged before fingerprints) is
 * validated again in full.
 */
export function validationFingerprint(ctx: ValidationContext): string {
  return createHash('sha256')
    .update(codeVersion())
    .update('\0')
    .update(catalogueSignature(ctx.catalogue))
    .update('\0')
    .update(ctx.region)
    .update('\0')
    .update(ctx.today)
    .digest('base64url');
}

/**
 * The validation context a creation runs with: the supplier's region, the deployment's catalogue (the one
 * staging validated with), today.
 */
export function creationValidationContext(
  config: Config,
  region: string | null | undefined,
  now: Date,
): ValidationContext {
  return validationContextAt(deploymentCatalogue(config), region, now);
}

/**
 * A staged payload's validation at creation: in full, unless staging recorded that it passed a validation on
 * the very terms of this one (then only parsed: the rules would say the same again).
 */
export function validateStaged(staged: StagedText, ctx: ValidationContext): ValidationResult<AccountPayload> {
  const raw: unknown = JSON.parse(staged.text);
  return staged.validatedWith !== null && staged.validatedWith === validationFingerprint(ctx)
    ? parseValidatedAccount(raw, ctx)
    : validateAccount(raw, ctx);
}

const signatures = new WeakMap<Catalogue, string>();

function catalogueSignature(catalogue: Catalogue): string {
  let signature = signatures.get(catalogue);
  if (signature === undefined) {
    const entries = Object.keys(catalogue)
      .sort()
      .map((name) => [name, [...catalogue[name as keyof Catalogue]].sort()]);
    signature = JSON.stringify(entries);
    signatures.set(catalogue, signature);
  }
  return signature;
}

/** Libraries whose behaviour is part of the rules (parsing, phone numbers). */
const RULE_LIBRARIES = ['zod', 'libphonenumber-js'];

let code: string | null = null;

/** The hash of the validation code this process runs (computed once, at first use). */
function codeVersion(): string {
  if (code !== null) return code;
  const here = dirname(fileURLToPath(import.meta.url));
  // This file is `<src>/use-cases/creation/`: the rules' folders are two levels up.
  const root = join(here, '..', '..');
  const hash = createHash('sha256');
  for (const dir of ['domain', 'schemas', 'vocabulary']) {
    for (const file of filesUnder(join(root, dir))) {
      hash.update(file.slice(root.length)).update('\0').update(readFileSync(file)).update('\0');
    }
  }
  for (const name of RULE_LIBRARIES) hash.update(`${name}@${packageVersion(here, name)}\0`);
  code = hash.digest('base64url');
  return code;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((entry) => {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) return filesUnder(path);
      return /\.(ts|js|json)$/.test(entry) && !entry.endsWith('.map') ? [path] : [];
    });
}

/** The installed version of a package, found in the nearest `node_modules` up from `from` ('?' if none). */
function packageVersion(from: string, name: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const manifest = join(dir, 'node_modules', name, 'package.json');
    if (existsSync(manifest))
      return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
    if (dirname(dir) === dir) return '?';
  }
}
