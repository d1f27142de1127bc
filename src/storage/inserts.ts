import { isDuplicateKey } from '../infra/mongo.js';

type BulkError = {
  code?: number;
  writeErrors?: { code?: number; index?: number; err?: { index?: number; code?: number } }[];
};

/**
 * Inserts documents ignoring duplicate-key errors (another request or an earlier attempt already wrote them).
 * Returns the indexes this call actually inserted; any other failure is rethrown.
 */
export async function insertIgnoringDuplicates(
  model: { insertMany(docs: object[], opts: object): Promise<unknown> },
  docs: object[],
): Promise<Set<number>> {
  if (docs.length === 0) return new Set();
  try {
    await model.insertMany(docs, { ordered: false });
    return new Set(docs.map((_, i) => i));
  } catch (err) {
    const writeErrors = (err as BulkError).writeErrors;
    if (!writeErrors || writeErrors.length === 0) {
      if (isDuplicateKey(err) && docs.length === 1) return new Set();
      throw err;
    }
    const failed = new Set<number>();
    for (const w of writeErrors) {
      const code = w.code ?? w.err?.code;
      if (!isDuplicateKey({ code })) throw err;
      failed.add(w.index ?? w.err?.index ?? -1);
    }
    return new Set(docs.map((_, i) => i).filter((i) => !failed.has(i)));
  }
}
